package boomtool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/boomerangd/boomerang/client"
)

// savedSession is what "boomtool login" keeps in the session file: the
// session and how the connection was made.
type savedSession struct {
	Addr      string    `json:"addr"`
	Client    string    `json:"client"`
	SessionID string    `json:"session_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Admin     bool      `json:"admin"`
	Role      string    `json:"role,omitempty"`
	TLS       bool      `json:"tls,omitempty"`
	CA        string    `json:"ca,omitempty"`
	Cert      string    `json:"cert,omitempty"`
	Key       string    `json:"key,omitempty"`
}

func (s *savedSession) session() client.Session {
	return client.Session{ID: s.SessionID, ExpiresAt: s.ExpiresAt, Admin: s.Admin}
}

func (s *savedSession) with(cs client.Session) *savedSession {
	n := *s
	n.SessionID, n.ExpiresAt = cs.ID, cs.ExpiresAt
	return &n
}

// sessionPath is <config dir>/boomerang/session.json.
func (a *app) sessionPath() (string, error) {
	dir, err := a.env.ConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the session file: %w", err)
	}
	return filepath.Join(dir, "boomerang", "session.json"), nil
}

// loadSession reads the session file; nil if there is none.
func (a *app) loadSession() (*savedSession, error) {
	path, err := a.sessionPath()
	if err != nil {
		return nil, nil // no place for a session: as good as none
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the session file: %w", err)
	}
	var s savedSession
	if err := json.Unmarshal(b, &s); err != nil || s.SessionID == "" || s.Addr == "" {
		return nil, fmt.Errorf("the session file %s is damaged; run boomtool logout, then boomtool login", path)
	}
	return &s, nil
}

// saveSession writes the session file, readable by the user alone: the
// session id is as good as a password until it expires.
func (a *app) saveSession(s *savedSession) error {
	path, err := a.sessionPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("saving the session: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".session-*.json")
	if err != nil {
		return fmt.Errorf("saving the session: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; Chmod makes sure of it.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the session: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the session: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the session: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("saving the session: %w", err)
	}
	return nil
}

// removeSession deletes the session file; it reports whether there was
// one.
func (a *app) removeSession() (bool, error) {
	path, err := a.sessionPath()
	if err != nil {
		return false, err
	}
	err = os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

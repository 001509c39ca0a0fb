package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// sessionIDBytes is the entropy of a session id: 256 bits.
const sessionIDBytes = 32

// maxSweepInterval bounds how long forgotten sessions linger in memory.
const maxSweepInterval = time.Minute

// Session is an issued session.
type Session struct {
	ID      string // 43 characters of unpadded URL-safe base64
	Client  string
	Admin   bool
	Expires time.Time
}

// Principal is who a session speaks for.
type Principal struct {
	Client string
	Admin  bool
}

// sessionKey is the SHA-256 of a session id. The table is keyed by it, so
// that lookups do not branch on the secret itself.
type sessionKey [sha256.Size]byte

type session struct {
	key     sessionKey
	client  string
	admin   bool
	expires time.Time
}

// sessions holds every issued session until ExpiredRetention after its
// expiry. Each client's sessions are also kept in issue order, oldest
// first, to bound them per client.
type sessions struct {
	ttl, retention time.Duration
	perClient      int

	mu        sync.RWMutex
	byKey     map[sessionKey]*session
	byClient  map[string][]*session
	nextSweep time.Time
}

func newSessions(cfg *Config) *sessions {
	return &sessions{
		ttl: cfg.SessionTTL, retention: cfg.ExpiredRetention, perClient: cfg.MaxSessionsPerClient,
		byKey: map[sessionKey]*session{}, byClient: map[string][]*session{},
	}
}

func keyOf(id string) sessionKey { return sha256.Sum256([]byte(id)) }

// issue creates a session for p valid from now.
func (t *sessions) issue(p Principal, now time.Time) Session {
	raw := make([]byte, sessionIDBytes)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	id := base64.RawURLEncoding.EncodeToString(raw)
	s := &session{key: keyOf(id), client: p.Client, admin: p.Admin, expires: now.Add(t.ttl)}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	list := t.byClient[p.Client]
	if len(list) >= t.perClient {
		delete(t.byKey, list[0].key)
		list = list[1:]
	}
	t.byClient[p.Client] = append(list, s)
	t.byKey[s.key] = s
	return Session{ID: id, Client: p.Client, Admin: p.Admin, Expires: s.expires}
}

// lookup returns the live session with id.
func (t *sessions) lookup(id string, now time.Time) (*session, error) {
	if id == "" {
		return nil, ErrNoSession
	}
	t.mu.RLock()
	s := t.byKey[keyOf(id)]
	var expires time.Time
	if s != nil {
		expires = s.expires
	}
	t.mu.RUnlock()
	switch {
	case s == nil:
		return nil, ErrUnknownSession
	case !now.Before(expires):
		return nil, ErrSessionExpired
	}
	return s, nil
}

// replace issues a new session for the live session id and expires id.
func (t *sessions) replace(id string, now time.Time) (Session, error) {
	old, err := t.lookup(id, now)
	if err != nil {
		return Session{}, err
	}
	t.mu.Lock()
	if !now.Before(old.expires) { // refreshed or expired concurrently
		t.mu.Unlock()
		return Session{}, ErrSessionExpired
	}
	old.expires = now
	t.mu.Unlock()
	return t.issue(Principal{Client: old.client, Admin: old.admin}, now), nil
}

// revoke forgets every session of client.
func (t *sessions) revoke(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.byClient[client] {
		delete(t.byKey, s.key)
	}
	delete(t.byClient, client)
}

// count returns how many sessions are remembered, live or expired.
func (t *sessions) count() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byKey)
}

// sweep forgets sessions expired for longer than the retention, at most
// once per interval. Called with mu held.
func (t *sessions) sweep(now time.Time) {
	if now.Before(t.nextSweep) {
		return
	}
	t.nextSweep = now.Add(min(t.ttl, maxSweepInterval))
	for client, list := range t.byClient {
		kept := list[:0]
		for _, s := range list {
			if now.Sub(s.expires) >= t.retention {
				delete(t.byKey, s.key)
				continue
			}
			kept = append(kept, s)
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(t.byClient, client)
		} else {
			t.byClient[client] = kept
		}
	}
}

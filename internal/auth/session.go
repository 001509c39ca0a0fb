package auth

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"sync"
	"time"
)

// sessionIDBytes is the entropy of a session id: 256 bits.
const sessionIDBytes = 32

// handleBytes is how much of a session's key its handle shows.
const handleBytes = 8

// maxSweepInterval bounds how long forgotten sessions linger in memory.
const maxSweepInterval = time.Minute

// Session is an issued session.
type Session struct {
	ID      string // 43 characters of unpadded URL-safe base64
	Handle  string // names the session in listings; see SessionInfo
	Client  string
	Role    Role
	Expires time.Time
}

// SessionInfo describes a live session without its id, which is as good
// as a password: a handle (16 hex digits of a hash of the id) names it
// instead.
type SessionInfo struct {
	Handle  string
	Client  string
	Role    Role
	Created time.Time
	Expires time.Time
	Source  string // the address it logged in from
}

// sessionKey is the SHA-256 of a session id. The table is keyed by it, so
// that lookups do not branch on the secret itself.
type sessionKey [sha256.Size]byte

type session struct {
	key     sessionKey
	handle  string
	client  string
	role    Role
	created time.Time
	expires time.Time
	source  string
}

func (s *session) principal() Principal {
	return Principal{Client: s.client, Role: s.role, Session: s.handle}
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

// issue creates a session for p, logged in from source, valid from now.
func (t *sessions) issue(client string, role Role, source string, now time.Time) Session {
	raw := make([]byte, sessionIDBytes)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	id := base64.RawURLEncoding.EncodeToString(raw)
	key := keyOf(id)
	s := &session{key: key, handle: hex.EncodeToString(key[:handleBytes]), client: client, role: role, created: now, expires: now.Add(t.ttl), source: source}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	list := t.byClient[client]
	if len(list) >= t.perClient {
		delete(t.byKey, list[0].key)
		list = list[1:]
	}
	t.byClient[client] = append(list, s)
	t.byKey[s.key] = s
	return Session{ID: id, Handle: s.handle, Client: client, Role: role, Expires: s.expires}
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
	return t.issue(old.client, old.role, old.source, now), nil
}

// end forgets the live session id: it is unknown from then on.
func (t *sessions) end(id string, now time.Time) error {
	s, err := t.lookup(id, now)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(s.client, func(x *session) bool { return x == s })
	return nil
}

// revoke forgets client's sessions that match (nil: all of them) and
// returns how many were live.
func (t *sessions) revoke(client string, match func(*session) bool, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	t.forget(client, func(s *session) bool {
		hit := match == nil || match(s)
		if hit && now.Before(s.expires) {
			n++
		}
		return hit
	})
	return n
}

// forget drops client's sessions for which drop says so. Called with mu
// held.
func (t *sessions) forget(client string, drop func(*session) bool) {
	list := t.byClient[client]
	kept := list[:0]
	for _, s := range list {
		if drop(s) {
			delete(t.byKey, s.key)
			continue
		}
		kept = append(kept, s)
	}
	clear(list[len(kept):])
	if len(kept) == 0 {
		delete(t.byClient, client)
		return
	}
	t.byClient[client] = kept
}

// list returns the live sessions of client ("": every client), ordered
// by client, then by when they were created.
func (t *sessions) list(client string, now time.Time) []SessionInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []SessionInfo
	add := func(list []*session) {
		for _, s := range list {
			if now.Before(s.expires) {
				out = append(out, SessionInfo{Handle: s.handle, Client: s.client, Role: s.role, Created: s.created, Expires: s.expires, Source: s.source})
			}
		}
	}
	if client != "" {
		add(t.byClient[client])
		return out
	}
	for _, list := range t.byClient {
		add(list)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), a.Created.Compare(b.Created), cmp.Compare(a.Handle, b.Handle))
	})
	return out
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
	for client := range t.byClient {
		t.forget(client, func(s *session) bool { return now.Sub(s.expires) >= t.retention })
	}
}

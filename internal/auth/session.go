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

	"github.com/boomerangd/boomerang/internal/auth/authpb"
)

// sessionIDBytes is the entropy of a session id: 256 bits.
const sessionIDBytes = 32

// handleBytes is how much of a session's key its handle shows.
const handleBytes = 8

// maxSweepInterval bounds how long forgotten sessions linger.
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
// that lookups do not branch on the secret itself, and it is all that is
// stored and replicated of the id.
type sessionKey [sha256.Size]byte

// session is a session as the system group's state holds it. Its fields
// but expires never change; expires changes under sessions.mu.
type session struct {
	key     sessionKey
	handle  string
	client  string
	role    Role
	created time.Time
	expires time.Time
	source  string
	index   uint64 // the log entry that started it
}

func (s *session) principal() Principal {
	return Principal{Client: s.client, Role: s.role, Session: s.handle}
}

// record returns the session's replicated record.
func (s *session) record() *authpb.Session {
	return &authpb.Session{
		Key: s.key[:], Client: s.client, Role: s.role.stored(),
		CreatedMs: s.created.UnixMilli(), ExpiresMs: s.expires.UnixMilli(), Source: s.source, Index: s.index,
	}
}

// sessionOf reads a record; ok is false for a malformed key.
func sessionOf(r *authpb.Session) (s *session, ok bool) {
	if len(r.Key) != sha256.Size {
		return nil, false
	}
	s = &session{
		client: r.Client, role: roleOf(r.Role, false), source: r.Source, index: r.Index,
		created: time.UnixMilli(r.CreatedMs), expires: time.UnixMilli(r.ExpiresMs),
	}
	copy(s.key[:], r.Key)
	s.handle = hex.EncodeToString(s.key[:handleBytes])
	return s, true
}

// older orders sessions by age: by the log entry that started them. It
// decides which session a client over its bound loses, alike on every
// replica whatever order they loaded their sessions in.
func older(a, b *session) int { return cmp.Compare(a.index, b.index) }

// sessions holds every session of the system group's state until
// ExpiredRetention after its expiry, by key and by client. Changes come
// only from the applied log (see system.go); lookups come from every
// request.
type sessions struct {
	ttl, retention time.Duration
	perClient      int

	mu        sync.RWMutex
	byKey     map[sessionKey]*session
	byClient  map[string][]*session
	nextSweep time.Time // when this node's next login asks for a sweep
}

func newSessions(cfg *Config) *sessions {
	return &sessions{
		ttl: cfg.SessionTTL, retention: cfg.ExpiredRetention, perClient: cfg.MaxSessionsPerClient,
		byKey: map[sessionKey]*session{}, byClient: map[string][]*session{},
	}
}

func keyOf(id string) sessionKey { return sha256.Sum256([]byte(id)) }

// mint makes a new session for client, logged in from source, valid from
// now: its id, shown once, and its record, to be replicated.
func (t *sessions) mint(client string, role Role, source string, now time.Time) (Session, *session) {
	raw := make([]byte, sessionIDBytes)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	id := base64.RawURLEncoding.EncodeToString(raw)
	key := keyOf(id)
	now = now.Truncate(time.Millisecond) // as the record keeps it
	s := &session{key: key, handle: hex.EncodeToString(key[:handleBytes]), client: client, role: role, created: now, expires: now.Add(t.ttl), source: source}
	return Session{ID: id, Handle: s.handle, Client: client, Role: role, Expires: s.expires}, s
}

// sweepDue reports whether a login at now should ask for a sweep of
// sessions expired beyond the retention, and when they expired by: at
// most once per interval.
func (t *sessions) sweepDue(now time.Time) (before time.Time, due bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.nextSweep) {
		return time.Time{}, false
	}
	t.nextSweep = now.Add(min(t.ttl, maxSweepInterval))
	return now.Add(-t.retention), true
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

// get returns the session with key, live or not.
func (t *sessions) get(key sessionKey) *session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byKey[key]
}

// add inserts s and ends the client's oldest sessions beyond max, which
// it returns.
func (t *sessions) add(s *session, max int) []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byKey[s.key] = s
	t.byClient[s.client] = append(t.byClient[s.client], s)
	var ended []*session
	for len(t.byClient[s.client]) > max {
		oldest := slices.MinFunc(t.byClient[s.client], older)
		ended = append(ended, t.forget(s.client, func(x *session) bool { return x == oldest })...)
	}
	return ended
}

// expire makes s expire at at, if it is later.
func (t *sessions) expire(s *session, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at.Before(s.expires) {
		s.expires = at
	}
}

// end forgets client's sessions that match and returns them.
func (t *sessions) end(client string, match func(*session) bool) []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.forget(client, match)
}

// sweep forgets every session that expired at or before before, and
// returns them.
func (t *sessions) sweep(before time.Time) []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []*session
	for client := range t.byClient {
		gone = append(gone, t.forget(client, func(s *session) bool { return !s.expires.After(before) })...)
	}
	return gone
}

// replaceAll makes list every session, at once for lookups.
func (t *sessions) replaceAll(list []*session) {
	byKey, byClient := make(map[sessionKey]*session, len(list)), map[string][]*session{}
	for _, s := range list {
		byKey[s.key] = s
		byClient[s.client] = append(byClient[s.client], s)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byKey, t.byClient = byKey, byClient
}

// forget drops client's sessions for which drop says so and returns
// them. Called with mu held.
func (t *sessions) forget(client string, drop func(*session) bool) []*session {
	list := t.byClient[client]
	kept := list[:0]
	var gone []*session
	for _, s := range list {
		if drop(s) {
			delete(t.byKey, s.key)
			gone = append(gone, s)
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
	return gone
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
	} else {
		for _, list := range t.byClient {
			add(list)
		}
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

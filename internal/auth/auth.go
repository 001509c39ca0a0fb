package auth

import (
	"errors"
	"fmt"
	"sync"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Auth keeps registered clients, checks passwords and issues sessions. Its
// methods are safe for concurrent use.
type Auth struct {
	cfg       Config
	st        *store.Store
	dummyHash []byte        // verified against for unknown clients
	hashSlots chan struct{} // bounds concurrent KDF runs

	sessions *sessions
	throttle *throttle

	writeMu sync.Mutex // serializes client registrations and removals
	mu      sync.RWMutex
	clients map[string]*storepb.Client // every registered client, as stored
}

// New loads the registered clients from st and returns an Auth over them.
// The caller keeps st open for as long as the Auth is used.
func New(st *store.Store, cfg Config) (*Auth, error) {
	if st == nil {
		return nil, errors.New("auth: a store is required")
	}
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	list, err := st.ListClients()
	if err != nil {
		return nil, fmt.Errorf("auth: load clients: %w", err)
	}
	a := &Auth{
		cfg:       cfg,
		st:        st,
		dummyHash: hashPassword(generatePassword(), cfg.Hash),
		hashSlots: make(chan struct{}, cfg.MaxConcurrentHashes),
		sessions:  newSessions(&cfg),
		throttle:  newThrottle(&cfg),
		clients:   make(map[string]*storepb.Client, len(list)),
	}
	for _, c := range list {
		a.clients[c.Id] = c
	}
	return a, nil
}

// Bootstrap creates the first admin when no client is registered yet. With
// password "" it generates a strong one and returns it: it is shown this
// once and stored only as a hash. created is false when clients already
// exist; then nothing changes, whatever the arguments.
func (a *Auth) Bootstrap(adminID, password string) (generated string, created bool, err error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.mu.RLock()
	empty := len(a.clients) == 0
	a.mu.RUnlock()
	if !empty {
		return "", false, nil
	}
	if password == "" {
		password = generatePassword()
		generated = password
	}
	if _, _, err := a.registerLocked(ClientSpec{ID: adminID, Password: password, Admin: true}); err != nil {
		return "", false, fmt.Errorf("auth: bootstrap admin: %w", err)
	}
	a.cfg.Logger.Info("created the bootstrap admin", "client", adminID, "generated_password", generated != "")
	return generated, true, nil
}

// Login checks a client's password and issues a session. A wrong password
// and an unknown client both give ErrInvalidCredentials and cost the same
// time. After a failure, attempts for the same client id are refused with
// a *ThrottledError until a backoff has passed, without checking the
// password.
func (a *Auth) Login(clientID, password string) (Session, error) {
	if validID(clientID) != nil || len(password) > MaxPasswordLen {
		return Session{}, ErrInvalidCredentials
	}
	if wait := a.throttle.wait(clientID, a.cfg.Clock.Now()); wait > 0 {
		return Session{}, &ThrottledError{RetryAfter: wait}
	}
	c, ok := a.lookup(clientID)
	hash := a.dummyHash
	if ok {
		hash = c.PasswordHash
	}
	match, err := a.verify(password, hash)
	if err != nil {
		a.cfg.Logger.Error("stored password hash is unreadable", "client", clientID, "err", err)
	}
	if !ok || !match {
		wait := a.throttle.fail(clientID, a.cfg.Clock.Now())
		return Session{}, fmt.Errorf("%w (next attempt allowed in %ds)", ErrInvalidCredentials, retrySeconds(wait))
	}
	a.throttle.succeed(clientID)
	return a.sessions.issue(Principal{Client: c.Id, Admin: c.Admin}, a.cfg.Clock.Now()), nil
}

// Authenticate returns who a session speaks for: ErrNoSession for "",
// ErrSessionExpired for an expired or replaced one, ErrUnknownSession for
// anything else that is not a live session.
func (a *Auth) Authenticate(sessionID string) (Principal, error) {
	s, err := a.sessions.lookup(sessionID, a.cfg.Clock.Now())
	if err != nil {
		return Principal{}, err
	}
	return Principal{Client: s.client, Admin: s.admin}, nil
}

// Refresh issues a new session for a live one, which ends: requests with
// the old id get ErrSessionExpired from then on.
func (a *Auth) Refresh(sessionID string) (Session, error) {
	return a.sessions.replace(sessionID, a.cfg.Clock.Now())
}

// Sessions returns how many sessions are remembered, live or recently
// expired.
func (a *Auth) Sessions() int { return a.sessions.count() }

// verify runs the KDF, at most MaxConcurrentHashes at a time.
func (a *Auth) verify(password string, hash []byte) (bool, error) {
	a.hashSlots <- struct{}{}
	defer func() { <-a.hashSlots }()
	return verifyPassword(password, hash)
}

// hash makes a new password hash, at most MaxConcurrentHashes at a time.
func (a *Auth) hash(password string) []byte {
	a.hashSlots <- struct{}{}
	defer func() { <-a.hashSlots }()
	return hashPassword(password, a.cfg.Hash)
}

func (a *Auth) lookup(id string) (*storepb.Client, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	c, ok := a.clients[id]
	return c, ok
}

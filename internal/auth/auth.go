package auth

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

// Auth keeps registered clients, checks passwords and issues sessions. Its
// methods are safe for concurrent use.
type Auth struct {
	cfg       Config
	st        *store.Store
	keys      *keyring
	dummyHash []byte        // verified against by CheckPassword for unknown clients
	hashSlots chan struct{} // bounds concurrent KDF runs
	budget    *loginBudget
	sessions  *sessions
	throttle  *throttle

	// pause waits out an unknown client's login for as long as a
	// verification takes, in real time: it is there to be measured from
	// outside. Tests replace it.
	pause func(time.Duration)

	writeMu sync.Mutex // serializes changes to clients

	mu      sync.RWMutex
	clients map[string]*entry // every registered client
}

// New loads the registered clients from st and returns an Auth over them.
// Records whose signing secrets are in the clear, or sealed with a key
// other than the first of Config.SecretKeys, are sealed again with it. The
// caller keeps st open for as long as the Auth is used.
func New(st *store.Store, cfg Config) (*Auth, error) {
	if st == nil {
		return nil, errors.New("auth: a store is required")
	}
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	keys, err := newKeyring(cfg.SecretKeys)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	dummy := hashPassword(generatePassword(), cfg.Hash)
	a := &Auth{
		cfg:       cfg,
		st:        st,
		keys:      keys,
		dummyHash: dummy,
		hashSlots: make(chan struct{}, cfg.MaxConcurrentHashes),
		budget:    newLoginBudget(&cfg, time.Since(start)),
		sessions:  newSessions(&cfg),
		throttle:  newThrottle(&cfg),
		pause:     time.Sleep,
		clients:   map[string]*entry{},
	}
	if err := a.load(); err != nil {
		return nil, err
	}
	return a, nil
}

// load reads every client and seals stale records again.
func (a *Auth) load() error {
	list, err := a.st.ListClients()
	if err != nil {
		return fmt.Errorf("auth: load clients: %w", err)
	}
	b := a.st.NewBatch()
	for _, rec := range list {
		e, stale, err := decodeEntry(rec, a.keys)
		if err != nil {
			return err
		}
		if stale {
			e.rec = e.encode(a.keys)
			b.PutClient(e.rec)
		}
		a.clients[rec.Id] = e
	}
	if n := b.Count(); n > 0 {
		if err := a.st.Commit(b); err != nil {
			return fmt.Errorf("auth: seal signing secrets: %w", err)
		}
		a.cfg.Logger.Info("sealed signing secrets with the current secret key", "clients", n, "key_id", fmt.Sprintf("%x", a.keys.keys[0].id))
	}
	return nil
}

// Bootstrap creates the first admin when no client is registered yet. With
// password "" it generates a strong one and returns it: it is shown this
// once and stored only as a hash. created is false when clients already
// exist; then nothing changes, whatever the arguments (see
// CheckPassword).
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
	if _, _, err := a.registerLocked(ClientSpec{ID: adminID, Password: password, Role: RoleAdmin}); err != nil {
		return "", false, fmt.Errorf("auth: bootstrap admin: %w", err)
	}
	a.cfg.Logger.Info("created the bootstrap admin", "client", adminID, "generated_password", generated != "")
	return generated, true, nil
}

// CheckPassword reports whether password is id's, outside of logins: no
// session, no throttling, no budget. The server uses it at start-up to
// say when a configured admin password is not the admin's.
func (a *Auth) CheckPassword(id, password string) bool {
	e, ok := a.lookup(id)
	hash := a.dummyHash
	if ok {
		hash = e.rec.PasswordHash
	}
	match, _ := a.verify(password, hash)
	return ok && match
}

// Login checks a client's password and issues a session. source is the
// address the attempt comes from. A wrong password and an unknown client
// both give ErrInvalidCredentials and take the same time, though only a
// known client's costs a password hash. After a failure, attempts for the
// same client id from the same source are refused with a *ThrottledError
// until a backoff has passed, without checking the password. An attempt
// beyond the login budget (Config.LoginCPU, Config.LoginsPerSource) gets
// ErrLoginBusy.
func (a *Auth) Login(clientID, password, source string) (Session, error) {
	e, err := a.check(clientID, password, source)
	if err != nil {
		return Session{}, err
	}
	return a.sessions.issue(e.rec.Id, e.role, source, a.cfg.Clock.Now()), nil
}

// check is Login without the session: the password check, throttled and
// budgeted.
func (a *Auth) check(clientID, password, source string) (*entry, error) {
	if validID(clientID) != nil || len(password) > MaxPasswordLen {
		return nil, ErrInvalidCredentials
	}
	key := throttleKey(clientID, source)
	if wait := a.throttle.begin(key, a.cfg.Clock.Now); wait > 0 {
		return nil, &ThrottledError{RetryAfter: wait}
	}
	defer a.throttle.end(key)
	if err := a.budget.take(source, a.cfg.Clock); err != nil {
		return nil, err
	}
	e, known := a.lookup(clientID)
	match := false
	if known {
		start := time.Now()
		var err error
		if match, err = a.verify(password, e.rec.PasswordHash); err != nil {
			a.cfg.Logger.Error("stored password hash is unreadable", "client", clientID, "err", err)
		}
		a.budget.observe(time.Since(start))
	} else {
		a.hashSlots <- struct{}{}
		a.pause(a.budget.cost())
		<-a.hashSlots
	}
	if !match {
		wait := a.throttle.fail(key, a.cfg.Clock.Now())
		return nil, fmt.Errorf("%w (next attempt allowed in %ds)", ErrInvalidCredentials, retrySeconds(wait))
	}
	a.throttle.succeed(key)
	return e, nil
}

// Authenticate returns who a session speaks for: ErrNoSession for "",
// ErrSessionExpired for an expired or replaced one, ErrUnknownSession for
// anything else that is not a live session.
func (a *Auth) Authenticate(sessionID string) (Principal, error) {
	s, err := a.sessions.lookup(sessionID, a.cfg.Clock.Now())
	if err != nil {
		return Principal{}, err
	}
	return s.principal(), nil
}

// Refresh issues a new session for a live one, which ends: requests with
// the old id get ErrSessionExpired from then on.
func (a *Auth) Refresh(sessionID string) (Session, error) {
	return a.sessions.replace(sessionID, a.cfg.Clock.Now())
}

// Logout ends a live session: requests with its id get ErrUnknownSession
// from then on.
func (a *Auth) Logout(sessionID string) error {
	return a.sessions.end(sessionID, a.cfg.Clock.Now())
}

// ListSessions returns the live sessions of client, or of every client
// for "".
func (a *Auth) ListSessions(client string) []SessionInfo {
	return a.sessions.list(client, a.cfg.Clock.Now())
}

// RevokeSessions ends client's session with handle, or all of client's
// sessions for handle "", and returns how many live ones ended.
func (a *Auth) RevokeSessions(client, handle string) int {
	var match func(*session) bool
	if handle != "" {
		match = func(s *session) bool { return s.handle == handle }
	}
	n := a.sessions.revoke(client, match, a.cfg.Clock.Now())
	if n > 0 {
		a.cfg.Logger.Info("sessions revoked", "client", client, "count", n)
	}
	return n
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

func (a *Auth) lookup(id string) (*entry, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	e, ok := a.clients[id]
	return e, ok
}

// store writes e's record and makes e the client's entry. writeMu is
// held.
func (a *Auth) store(e *entry) error {
	e.rec = e.encode(a.keys)
	b := a.st.NewBatch()
	b.PutClient(e.rec)
	if err := a.st.Commit(b); err != nil {
		return fmt.Errorf("auth: store client %q: %w", e.rec.Id, err)
	}
	a.mu.Lock()
	a.clients[e.rec.Id] = e
	a.mu.Unlock()
	return nil
}

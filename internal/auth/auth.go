package auth

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
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

	writeMu sync.Mutex // serializes this node's changes to clients

	mu      sync.RWMutex
	clients map[string]*entry // every registered client

	// Proposals to the system group, and what was applied of it.
	origin       uint64 // names this process's proposals
	pmu          sync.Mutex
	node         Proposer
	proposals    uint64                  // proposals made
	waiting      map[uint64]chan outcome // by proposal
	appliedIndex uint64
	failed       atomic.Pointer[error]
	led          chan struct{} // closed once this node led the system group
	leadOnce     sync.Once
	synced       atomic.Bool // the replica caught up (see readable)
	opened       atomic.Bool // Open was called
}

// New loads the registered clients and their sessions from st, the
// system group's state as far as it was applied, and returns an Auth over
// them; give it to the replica node that hosts the system group as its
// state machine, then Attach the node. A record sealed with a key that is
// not in Config.SecretKeys fails it with ErrNoKey. The caller keeps st
// open for as long as the Auth is used.
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
		origin:    newOrigin(),
		waiting:   map[uint64]chan outcome{},
		led:       make(chan struct{}),
	}
	if err := a.load(); err != nil {
		return nil, err
	}
	a.synced.Store(!cfg.Replicated)
	a.opened.Store(!cfg.Replicated)
	return a, nil
}

// Bootstrap creates the first admin when no client is registered yet. With
// password "" it generates a strong one and returns it: it is shown this
// once and stored only as a hash. created is false when clients already
// exist, here or in the system group's log; then nothing changes,
// whatever the arguments (see CheckPassword).
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
	_, _, err = a.registerLocked(ClientSpec{ID: adminID, Password: password, Role: RoleAdmin}, putOptions{onlyIfEmpty: true})
	if errors.Is(err, ErrExists) {
		return "", false, nil
	}
	if err != nil {
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
	s, err := a.startSession(e.rec.Id, e.role, source, nil)
	if errors.Is(err, ErrNotFound) { // deregistered meanwhile
		return Session{}, ErrInvalidCredentials
	}
	return s, err
}

// startSession issues a session through the system group, replacing the
// session with key replaces if not nil.
func (a *Auth) startSession(client string, role Role, source string, replaces []byte) (Session, error) {
	now := a.cfg.Clock.Now()
	issued, s := a.sessions.mint(client, role, source, now)
	ps := &authpb.PutSession{Session: s.record(), MaxPerClient: uint32(a.cfg.MaxSessionsPerClient), Replaces: replaces}
	if before, due := a.sessions.sweepDue(now); due {
		ps.SweepBeforeMs = before.UnixMilli()
	}
	out, err := a.commit(&authpb.SystemCommand{TimeMs: now.UnixMilli(), Change: &authpb.SystemCommand_PutSession{PutSession: ps}})
	if err == nil {
		err = out.err(client)
	}
	if err != nil {
		return Session{}, err
	}
	return issued, nil
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
	if !a.readable() {
		return nil, ErrCatchingUp
	}
	e, known := a.lookup(clientID)
	if !known && a.recheck() {
		e, known = a.lookup(clientID)
	}
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
	s, err := a.session(sessionID)
	if err != nil {
		return Principal{}, err
	}
	return s.principal(), nil
}

// session looks a live session up; in a cluster, an unknown one again
// once this node's replica caught up: it may have been issued through
// another node a moment ago.
func (a *Auth) session(id string) (*session, error) {
	if id != "" && !a.readable() {
		return nil, ErrCatchingUp
	}
	s, err := a.sessions.lookup(id, a.cfg.Clock.Now())
	if errors.Is(err, ErrUnknownSession) && a.recheck() {
		s, err = a.sessions.lookup(id, a.cfg.Clock.Now())
	}
	return s, err
}

// Refresh issues a new session for a live one, which ends: requests with
// the old id get ErrSessionExpired from then on.
func (a *Auth) Refresh(sessionID string) (Session, error) {
	old, err := a.session(sessionID)
	if err != nil {
		return Session{}, err
	}
	s, err := a.startSession(old.client, old.role, old.source, old.key[:])
	if errors.Is(err, ErrNotFound) { // the client went or changed role meanwhile
		return Session{}, ErrUnknownSession
	}
	return s, err
}

// Logout ends a live session: requests with its id get ErrUnknownSession
// from then on.
func (a *Auth) Logout(sessionID string) error {
	s, err := a.session(sessionID)
	if err != nil {
		return err
	}
	_, err = a.endSessions(&authpb.EndSessions{Client: s.client, Key: s.key[:]})
	return err
}

// endSessions ends the sessions es matches through the system group and
// returns how many live ones ended.
func (a *Auth) endSessions(es *authpb.EndSessions) (int, error) {
	out, err := a.commit(&authpb.SystemCommand{
		TimeMs: a.cfg.Clock.Now().UnixMilli(),
		Change: &authpb.SystemCommand_EndSessions{EndSessions: es},
	})
	return out.ended, err
}

// ListSessions returns the live sessions of client, or of every client
// for "".
func (a *Auth) ListSessions(client string) []SessionInfo {
	return a.sessions.list(client, a.cfg.Clock.Now())
}

// RevokeSessions ends client's session with handle, or all of client's
// sessions for handle "", and returns how many live ones ended.
func (a *Auth) RevokeSessions(client, handle string) (int, error) {
	n, err := a.endSessions(&authpb.EndSessions{Client: client, Handle: handle})
	if n > 0 {
		a.cfg.Logger.Info("sessions revoked", "client", client, "count", n)
	}
	return n, err
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

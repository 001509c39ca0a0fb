package auth

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Limits on client fields.
const (
	MaxClientIDLen      = 128
	MinPasswordLen      = 8
	MaxPasswordLen      = 1024
	SigningSecretBytes  = 32 // generated signing secrets
	MinSigningSecretLen = 16
	MaxSigningSecretLen = 1024
	// MaxCountedTasks bounds the count DeregisterClient reports.
	MaxCountedTasks = 10000
)

// ClientSpec describes a client to register.
type ClientSpec struct {
	ID       string // [A-Za-z0-9._-]{1,128}
	Password string // at least MinPasswordLen bytes
	Admin    bool

	// Callback, Retry and DefaultMode are the client's defaults for its
	// tasks; nil or UNSPECIFIED leave them to the task or the server.
	// They are stored as given: the caller validates them.
	Callback    *storepb.Callback
	Retry       *storepb.RetryPolicy
	DefaultMode storepb.DispatchMode

	// DeadLetterMaxEntries (0: unbounded) and DeadLetterRetention (0:
	// until deleted) bound the client's dead letter queue.
	DeadLetterMaxEntries uint32
	// GroupLimit bounds the tasks one group may hold (0: the server's
	// default).
	GroupLimit          uint32
	DeadLetterRetention time.Duration

	// SigningSecret is the HMAC key of the client's webhook signatures;
	// empty generates SigningSecretBytes random bytes.
	SigningSecret []byte
}

// RegisterClient stores a new client and returns it with its signing
// secret, which is shown this once. An id in use gives ErrExists; a bad
// id, password or secret a *scheduler.FieldError.
func (a *Auth) RegisterClient(spec ClientSpec) (*storepb.Client, []byte, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	return a.registerLocked(spec)
}

func (a *Auth) registerLocked(spec ClientSpec) (*storepb.Client, []byte, error) {
	if err := validateSpec(&spec); err != nil {
		return nil, nil, err
	}
	if _, ok := a.lookup(spec.ID); ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrExists, spec.ID)
	}
	secret := spec.SigningSecret
	if len(secret) == 0 {
		secret = newSecret(SigningSecretBytes)
	}
	c := &storepb.Client{
		Id:             spec.ID,
		PasswordHash:   a.hash(spec.Password),
		Admin:          spec.Admin,
		Callback:       proto.CloneOf(spec.Callback), // owned: Defaults hands it out
		Retry:          spec.Retry,
		DefaultMode:    spec.DefaultMode,
		SigningSecret:  secret,
		CreatedMs:      a.cfg.Clock.Now().UnixMilli(),
		DlqMaxEntries:  spec.DeadLetterMaxEntries,
		DlqRetentionMs: spec.DeadLetterRetention.Milliseconds(),
		GroupLimit:     spec.GroupLimit,
	}
	b := a.st.NewBatch()
	b.PutClient(c)
	if err := a.st.Commit(b); err != nil {
		return nil, nil, fmt.Errorf("auth: store client %q: %w", spec.ID, err)
	}
	a.mu.Lock()
	a.clients[c.Id] = c
	a.mu.Unlock()
	a.cfg.Logger.Info("client registered", "client", c.Id, "admin", c.Admin)
	return redacted(c), slices.Clone(secret), nil
}

// DeregisterClient removes a client and ends its sessions. It refuses the
// last admin (ErrLastAdmin) and a client that still has tasks
// (*HasTasksError): cancel them first. The client's dead letters stay,
// visible to admins.
func (a *Auth) DeregisterClient(id string) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	c, ok := a.lookup(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if c.Admin && a.admins() == 1 {
		return ErrLastAdmin
	}
	if err := a.checkNoTasks(id); err != nil {
		return err
	}
	b := a.st.NewBatch()
	b.DeleteClient(id)
	if err := a.st.Commit(b); err != nil {
		return fmt.Errorf("auth: delete client %q: %w", id, err)
	}
	a.mu.Lock()
	delete(a.clients, id)
	a.mu.Unlock()
	a.sessions.revoke(id)
	a.throttle.succeed(id)
	a.cfg.Logger.Info("client deregistered", "client", id)
	return nil
}

// checkNoTasks counts a client's tasks, up to MaxCountedTasks.
func (a *Auth) checkNoTasks(id string) error {
	n := 0
	for after := uint64(0); ; {
		page, next, err := a.st.ListTasks(store.TaskQuery{Client: id, After: after, Limit: store.MaxLimit})
		if err != nil {
			return fmt.Errorf("auth: count tasks of %q: %w", id, err)
		}
		n += len(page)
		switch {
		case next == 0 && n == 0:
			return nil
		case next == 0:
			return &HasTasksError{Client: id, Count: n}
		case n >= MaxCountedTasks:
			return &HasTasksError{Client: id, Count: n, More: true}
		}
		after = next
	}
}

func (a *Auth) admins() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	n := 0
	for _, c := range a.clients {
		if c.Admin {
			n++
		}
	}
	return n
}

// Client returns a registered client without its password hash and
// signing secret, or ErrNotFound.
func (a *Auth) Client(id string) (*storepb.Client, error) {
	c, ok := a.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return redacted(c), nil
}

// Defaults returns what a client's tasks inherit when they set nothing:
// its callback and its dispatch mode. It copies nothing, for it is on
// every registration's path: the callback is the registered record's own
// and must not be changed. Records are replaced, never changed in place.
func (a *Auth) Defaults(id string) (*storepb.Callback, storepb.DispatchMode, error) {
	c, ok := a.lookup(id)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return c.Callback, c.DefaultMode, nil
}

// ListClients returns every registered client ordered by id, without
// password hashes and signing secrets.
func (a *Auth) ListClients() ([]*storepb.Client, error) {
	a.mu.RLock()
	list := make([]*storepb.Client, 0, len(a.clients))
	for _, c := range a.clients {
		list = append(list, redacted(c))
	}
	a.mu.RUnlock()
	slices.SortFunc(list, func(x, y *storepb.Client) int { return strings.Compare(x.Id, y.Id) })
	return list, nil
}

// redacted copies c without its secrets.
func redacted(c *storepb.Client) *storepb.Client {
	r := proto.CloneOf(c)
	r.PasswordHash, r.SigningSecret = nil, nil
	return r
}

func validateSpec(s *ClientSpec) error {
	if err := validID(s.ID); err != nil {
		return err
	}
	switch {
	case len(s.Password) < MinPasswordLen || len(s.Password) > MaxPasswordLen:
		return &scheduler.FieldError{Field: "password", Rule: fmt.Sprintf("must be %d to %d bytes long", MinPasswordLen, MaxPasswordLen)}
	case len(s.SigningSecret) > 0 && (len(s.SigningSecret) < MinSigningSecretLen || len(s.SigningSecret) > MaxSigningSecretLen):
		return &scheduler.FieldError{Field: "signing_secret", Rule: fmt.Sprintf("must be empty (generate one) or %d to %d bytes long", MinSigningSecretLen, MaxSigningSecretLen)}
	case s.DeadLetterRetention < 0:
		return &scheduler.FieldError{Field: "dead_letters.retention_ms", Rule: "must not be negative"}
	}
	return nil
}

// validID checks a client id against [A-Za-z0-9._-]{1,128}.
func validID(id string) error {
	if id == "" || len(id) > MaxClientIDLen {
		return &scheduler.FieldError{Field: "client_id", Rule: fmt.Sprintf("must be 1 to %d characters of [A-Za-z0-9._-]", MaxClientIDLen)}
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return &scheduler.FieldError{Field: "client_id", Rule: fmt.Sprintf("must be 1 to %d characters of [A-Za-z0-9._-], found %q", MaxClientIDLen, c)}
		}
	}
	return nil
}

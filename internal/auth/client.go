package auth

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
	"github.com/boomerangd/boomerang/internal/egress"
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
	// MaxCallbackRules bounds each of a client's rule lists.
	MaxCallbackRules = 64
	// MaxCountedTasks bounds the count DeregisterClient reports.
	MaxCountedTasks = 10000
)

// ClientSpec describes a client to register.
type ClientSpec struct {
	ID       string // [A-Za-z0-9._-]{1,128}
	Password string // at least MinPasswordLen bytes
	Role     Role   // zero: RoleClient

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

	// CallbackAllow and CallbackDeny are the client's own callback rules
	// (see package egress).
	CallbackAllow, CallbackDeny []string

	// GroupRate is the default rate limit of the client's groups (nil or
	// a zero max: none); GroupRates the limits of groups of their own.
	// The caller validates them.
	GroupRate  *storepb.RateLimit
	GroupRates map[string]*storepb.RateLimit
}

// ClientInfo is a registered client as the API shows it: its record
// without the password hash and signing secrets, and what auth keeps
// beside it.
type ClientInfo struct {
	*storepb.Client
	Role                        Role
	CallbackAllow, CallbackDeny []string
	// PreviousSecretUntil is, after a rotation, when the old signing
	// secret stops signing; zero when there is none.
	PreviousSecretUntil time.Time
}

func (a *Auth) info(e *entry) ClientInfo {
	r := proto.CloneOf(e.rec)
	r.PasswordHash, r.SigningSecret = nil, nil
	ci := ClientInfo{Client: r, Role: e.role, CallbackAllow: slices.Clone(e.allow), CallbackDeny: slices.Clone(e.deny)}
	if live := e.liveSecrets(a.cfg.Clock.Now()); len(live) > 1 {
		ci.PreviousSecretUntil = time.UnixMilli(live[1].ExpiresMs)
	}
	return ci
}

// RegisterClient stores a new client and returns it with its signing
// secret, which is shown this once. An id in use gives ErrExists; a bad
// id, password, secret or rule a *scheduler.FieldError.
func (a *Auth) RegisterClient(spec ClientSpec) (ClientInfo, []byte, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	return a.registerLocked(spec, putOptions{create: true})
}

func (a *Auth) registerLocked(spec ClientSpec, o putOptions) (ClientInfo, []byte, error) {
	if spec.Role == 0 {
		spec.Role = RoleClient
	}
	if err := validateSpec(&spec); err != nil {
		return ClientInfo{}, nil, err
	}
	rules, err := ParseRules(spec.CallbackAllow, spec.CallbackDeny)
	if err != nil {
		return ClientInfo{}, nil, err
	}
	if _, ok := a.lookup(spec.ID); ok {
		return ClientInfo{}, nil, fmt.Errorf("%w: %q", ErrExists, spec.ID)
	}
	secret := spec.SigningSecret
	if len(secret) == 0 {
		secret = newSecret(SigningSecretBytes)
	}
	e := &entry{
		rec: &storepb.Client{
			Id:             spec.ID,
			PasswordHash:   a.hash(spec.Password),
			Callback:       proto.CloneOf(spec.Callback), // owned: Defaults hands it out
			Retry:          spec.Retry,
			DefaultMode:    spec.DefaultMode,
			CreatedMs:      a.cfg.Clock.Now().UnixMilli(),
			DlqMaxEntries:  spec.DeadLetterMaxEntries,
			DlqRetentionMs: spec.DeadLetterRetention.Milliseconds(),
			GroupLimit:     spec.GroupLimit,
		},
		role:    spec.Role,
		allow:   slices.Clone(spec.CallbackAllow),
		deny:    slices.Clone(spec.CallbackDeny),
		rules:   rules,
		secrets: []*authpb.Secret{{Key: slices.Clone(secret)}},
	}
	if err := setGroupRates(e.rec, true, spec.GroupRate, spec.GroupRates); err != nil {
		return ClientInfo{}, nil, err
	}
	if err := a.put(e, o); err != nil {
		return ClientInfo{}, nil, err
	}
	a.cfg.Logger.Info("client registered", "client", spec.ID, "role", spec.Role.String())
	return a.info(e), slices.Clone(secret), nil
}

// DeregisterClient removes a client and ends its sessions. It refuses the
// last admin (ErrLastAdmin) and a client that still has tasks
// (*HasTasksError): cancel them first. The client's dead letters stay,
// visible to admins.
func (a *Auth) DeregisterClient(id string) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	e, ok := a.lookup(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if e.role == RoleAdmin && a.admins() == 1 {
		return ErrLastAdmin
	}
	if err := a.checkNoTasks(id); err != nil {
		return err
	}
	out, err := a.commit(&authpb.SystemCommand{
		TimeMs: a.cfg.Clock.Now().UnixMilli(),
		Change: &authpb.SystemCommand_DeleteClient{DeleteClient: id},
	})
	if err == nil {
		err = out.err(id)
	}
	if err != nil {
		return err
	}
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
	for _, e := range a.clients {
		if e.role == RoleAdmin {
			n++
		}
	}
	return n
}

// Client returns a registered client, or ErrNotFound. In a cluster it is
// ErrCatchingUp while this node's replica of the system group catches up,
// and a client not known here is looked for again once the replica has
// caught up with its leader: it may have been registered through another
// node a moment ago. So ErrNotFound means the client does not exist, and
// a delivery may give up on it.
func (a *Auth) Client(id string) (ClientInfo, error) {
	if !a.readable() {
		return ClientInfo{}, ErrCatchingUp
	}
	e, ok := a.lookup(id)
	if !ok && a.recheck() {
		e, ok = a.lookup(id)
	}
	if !ok {
		return ClientInfo{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return a.info(e), nil
}

// Defaults returns what a client's tasks inherit when they set nothing:
// its callback and its dispatch mode. It copies nothing, for it is on
// every registration's path: the callback is the registered record's own
// and must not be changed. Records are replaced, never changed in place.
func (a *Auth) Defaults(id string) (*storepb.Callback, storepb.DispatchMode, error) {
	e, ok := a.lookup(id)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return e.rec.Callback, e.rec.DefaultMode, nil
}

// Limits returns a client's registered record, for the limits it sets,
// from memory: it is on every grouped registration's path. The record
// must not be changed (records are replaced, never changed in place).
func (a *Auth) Limits(id string) (*storepb.Client, bool) {
	e, ok := a.lookup(id)
	if !ok {
		return nil, false
	}
	return e.rec, true
}

// CallbackRules returns a client's own callback rules, nil when it has
// none or is unknown.
func (a *Auth) CallbackRules(id string) *egress.Policy {
	if e, ok := a.lookup(id); ok {
		return e.rules
	}
	return nil
}

// SigningSecrets returns a client's signing secrets that have not
// expired, newest first, each with its expiry (zero: none).
func (a *Auth) SigningSecrets(id string) ([]SigningSecret, error) {
	e, ok := a.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	var out []SigningSecret
	for _, s := range e.liveSecrets(a.cfg.Clock.Now()) {
		ss := SigningSecret{Key: slices.Clone(s.Key)}
		if s.ExpiresMs != 0 {
			ss.Until = time.UnixMilli(s.ExpiresMs)
		}
		out = append(out, ss)
	}
	return out, nil
}

// SigningSecret is a webhook signing secret and when it stops signing
// (zero: never).
type SigningSecret struct {
	Key   []byte
	Until time.Time
}

// ListClients returns every registered client ordered by id.
func (a *Auth) ListClients() []ClientInfo {
	a.mu.RLock()
	list := make([]ClientInfo, 0, len(a.clients))
	for _, e := range a.clients {
		list = append(list, a.info(e))
	}
	a.mu.RUnlock()
	slices.SortFunc(list, func(x, y ClientInfo) int { return strings.Compare(x.Id, y.Id) })
	return list
}

func validateSpec(s *ClientSpec) error {
	if err := validID(s.ID); err != nil {
		return err
	}
	switch {
	case !s.Role.valid():
		return &scheduler.FieldError{Field: "role", Rule: fmt.Sprintf("unknown role %d", s.Role)}
	case len(s.Password) < MinPasswordLen || len(s.Password) > MaxPasswordLen:
		return &scheduler.FieldError{Field: "password", Rule: fmt.Sprintf("must be %d to %d bytes long", MinPasswordLen, MaxPasswordLen)}
	case len(s.SigningSecret) > 0:
		if err := checkSecret(s.SigningSecret); err != nil {
			return err
		}
	}
	if s.DeadLetterRetention < 0 {
		return &scheduler.FieldError{Field: "dead_letters.retention_ms", Rule: "must not be negative"}
	}
	return nil
}

func checkSecret(secret []byte) error {
	if len(secret) < MinSigningSecretLen || len(secret) > MaxSigningSecretLen {
		return &scheduler.FieldError{Field: "signing_secret", Rule: fmt.Sprintf("must be empty (generate one) or %d to %d bytes long", MinSigningSecretLen, MaxSigningSecretLen)}
	}
	return nil
}

// ParseRules checks and parses a client's callback rules: a
// *scheduler.FieldError names the list that breaks a rule. No rules give
// a nil policy.
func ParseRules(allow, deny []string) (*egress.Policy, error) {
	for field, list := range map[string][]string{"callback_rules.allow": allow, "callback_rules.deny": deny} {
		if len(list) > MaxCallbackRules {
			return nil, &scheduler.FieldError{Field: field, Rule: fmt.Sprintf("must have at most %d rules, got %d", MaxCallbackRules, len(list))}
		}
		if _, err := egress.ParseRules(list); err != nil {
			return nil, &scheduler.FieldError{Field: field, Rule: strings.TrimPrefix(err.Error(), "egress: ")}
		}
	}
	return compileRules(allow, deny)
}

// validID checks a client id against [A-Za-z0-9._-]{1,128}.
func validID(id string) error {
	rule := fmt.Sprintf("must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_' and '-'", MaxClientIDLen)
	if id == "" || len(id) > MaxClientIDLen {
		return &scheduler.FieldError{Field: "client_id", Rule: fmt.Sprintf("%s, got %d bytes", rule, len(id))}
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return &scheduler.FieldError{Field: "client_id", Rule: fmt.Sprintf("%s; found %s at byte %d", rule, describeChar(id[i:]), i)}
		}
	}
	return nil
}

// describeChar names the character s starts with for a message: quoted
// when printable, else by its code, so that a control character or a
// stray byte cannot mangle the message.
func describeChar(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size <= 1:
		return fmt.Sprintf("the byte 0x%02x (not UTF-8)", s[0])
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return fmt.Sprintf("the control character %U", r)
	}
	return fmt.Sprintf("%q (%U)", r, r)
}

package auth

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// DefaultSecretOverlap is how long a replaced signing secret still signs
// unless RotateSigningSecret is told otherwise.
const DefaultSecretOverlap = 24 * time.Hour

// MaxSecretOverlap bounds a rotation's overlap.
const MaxSecretOverlap = 30 * 24 * time.Hour

// ClientUpdate changes a client; what it does not set stays as it is.
type ClientUpdate struct {
	// SetCallback replaces the default callback with Callback (nil:
	// none); SetRetry the retry policy with Retry.
	SetCallback bool
	Callback    *storepb.Callback
	SetRetry    bool
	Retry       *storepb.RetryPolicy

	// SetDeadLetters replaces the dead letter policy.
	SetDeadLetters       bool
	DeadLetterMaxEntries uint32
	DeadLetterRetention  time.Duration

	// DefaultMode, when not nil, replaces the default dispatch mode;
	// GroupLimit the tasks one group may hold (0: the server's default).
	DefaultMode *storepb.DispatchMode
	GroupLimit  *uint32

	// Role, when not zero, replaces the role and ends the client's
	// sessions, which carry the old one.
	Role Role

	// SetRules replaces the callback rules.
	SetRules                    bool
	CallbackAllow, CallbackDeny []string

	// SetGroupRate replaces the default rate limit of the client's
	// groups with GroupRate (nil or a zero max: none); GroupRates sets the
	// limits of groups of their own (a zero max removes a group's).
	SetGroupRate bool
	GroupRate    *storepb.RateLimit
	GroupRates   map[string]*storepb.RateLimit
}

// UpdateClient changes a client's settings. Demoting the last admin gives
// ErrLastAdmin.
func (a *Auth) UpdateClient(id string, u ClientUpdate) (ClientInfo, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	old, ok := a.lookup(id)
	if !ok {
		return ClientInfo{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e := old.with()
	switch {
	case u.Role != 0 && !u.Role.valid():
		return ClientInfo{}, invalidField("role", "unknown role %d", u.Role)
	case u.Role != 0 && u.Role != RoleAdmin && old.role == RoleAdmin && a.admins() == 1:
		return ClientInfo{}, ErrLastAdmin
	case u.SetDeadLetters && u.DeadLetterRetention < 0:
		return ClientInfo{}, invalidField("dead_letters.retention_ms", "must not be negative")
	}
	if u.SetRules {
		rules, err := ParseRules(u.CallbackAllow, u.CallbackDeny)
		if err != nil {
			return ClientInfo{}, err
		}
		e.allow, e.deny, e.rules = slices.Clone(u.CallbackAllow), slices.Clone(u.CallbackDeny), rules
	}
	if u.SetCallback {
		e.rec.Callback = proto.CloneOf(u.Callback)
	}
	if u.SetRetry {
		e.rec.Retry = proto.CloneOf(u.Retry)
	}
	if u.SetDeadLetters {
		e.rec.DlqMaxEntries, e.rec.DlqRetentionMs = u.DeadLetterMaxEntries, u.DeadLetterRetention.Milliseconds()
	}
	if u.DefaultMode != nil {
		e.rec.DefaultMode = *u.DefaultMode
	}
	if u.GroupLimit != nil {
		e.rec.GroupLimit = *u.GroupLimit
	}
	if err := setGroupRates(e.rec, u.SetGroupRate, u.GroupRate, u.GroupRates); err != nil {
		return ClientInfo{}, err
	}
	roleChanged := u.Role != 0 && u.Role != old.role
	if roleChanged {
		e.role = u.Role
	}
	if err := a.put(e, putOptions{endSessions: roleChanged}); err != nil {
		return ClientInfo{}, err
	}
	a.cfg.Logger.Info("client updated", "client", id, "role", e.role.String())
	return a.info(e), nil
}

// ChangePassword sets a client's password. With current (a client
// changing its own) it is checked first like a login from source: wrong,
// throttled or over budget, nothing changes. An admin passes no current.
// Every session of the client ends but keep (a session handle, "" for
// none).
func (a *Auth) ChangePassword(id, current, password, source, keep string) error {
	if len(password) < MinPasswordLen || len(password) > MaxPasswordLen {
		return invalidField("new_password", "must be %d to %d bytes long", MinPasswordLen, MaxPasswordLen)
	}
	if current != "" {
		if _, err := a.check(id, current, source); err != nil {
			return err
		}
	}
	hash := a.hash(password)
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	old, ok := a.lookup(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e := old.with()
	e.rec.PasswordHash = hash
	if err := a.put(e, putOptions{endSessions: true, keepSession: keep}); err != nil {
		return err
	}
	a.cfg.Logger.Info("password changed", "client", id)
	return nil
}

// RotateSigningSecret gives a client a new signing secret (empty:
// generated) and returns it, shown this once. The secret it replaces
// keeps signing for overlap, beside the new one; a secret older than
// that is dropped, so at most two sign at once.
func (a *Auth) RotateSigningSecret(id string, secret []byte, overlap time.Duration) (ClientInfo, []byte, error) {
	if overlap < 0 || overlap > MaxSecretOverlap {
		return ClientInfo{}, nil, invalidField("overlap_ms", "must be between 0 and %d, got %d", MaxSecretOverlap.Milliseconds(), overlap.Milliseconds())
	}
	if len(secret) == 0 {
		secret = newSecret(SigningSecretBytes)
	} else if err := checkSecret(secret); err != nil {
		return ClientInfo{}, nil, err
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	old, ok := a.lookup(id)
	if !ok {
		return ClientInfo{}, nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e := old.with()
	now := a.cfg.Clock.Now()
	e.secrets = []*authpb.Secret{{Key: slices.Clone(secret)}}
	if live := old.liveSecrets(now); overlap > 0 && len(live) > 0 {
		e.secrets = append(e.secrets, &authpb.Secret{Key: live[0].Key, ExpiresMs: now.Add(overlap).UnixMilli()})
	}
	if err := a.put(e, putOptions{}); err != nil {
		return ClientInfo{}, nil, err
	}
	a.cfg.Logger.Info("signing secret rotated", "client", id, "overlap", overlap.String())
	return a.info(e), slices.Clone(secret), nil
}

package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/boomerangd/boomerang/internal/scheduler"
)

var (
	// ErrInvalidCredentials: no such client, or a wrong password; the two
	// are not told apart.
	ErrInvalidCredentials = errors.New("auth: invalid client id or password")
	// ErrThrottled: a login for a client that failed to log in moments
	// ago. errors.As gives a *ThrottledError with the wait.
	ErrThrottled = errors.New("auth: too many failed logins")
	// ErrNoSession: a request that needs a session came without one.
	ErrNoSession = errors.New("auth: no session; log in first")
	// ErrUnknownSession: a session id that was never issued, was revoked,
	// or expired so long ago that it is forgotten.
	ErrUnknownSession = errors.New("auth: unknown session")
	// ErrSessionExpired: a session that was valid and has expired (or was
	// replaced by Refresh): log in again.
	ErrSessionExpired = errors.New("auth: session expired")
	// ErrExists: RegisterClient with an id that is taken.
	ErrExists = errors.New("auth: client already exists")
	// ErrNotFound: no client with that id.
	ErrNotFound = errors.New("auth: no such client")
	// ErrLastAdmin: deregistering or demoting the only admin, which would
	// leave nobody able to manage clients.
	ErrLastAdmin = errors.New("auth: cannot remove the last admin")
	// ErrHasTasks: DeregisterClient of a client that still has tasks.
	// errors.As gives a *HasTasksError with the count.
	ErrHasTasks = errors.New("auth: client still has tasks")
	// ErrLoginBusy: a login beyond the login budget: its source's share
	// of attempts, or the server's share of CPU for password hashing.
	// Retry later.
	ErrLoginBusy = errors.New("auth: too many logins; retry later")
	// ErrNoLeader: a change was not committed by the system group in
	// time (Config.WriteTimeout), most likely because it has no leader
	// at the moment. It may still take effect.
	ErrNoLeader = errors.New("auth: clients and sessions cannot change now (no leader of the system group); retry")
	// ErrCatchingUp: in a cluster, this node's replica of the system
	// group has not caught up with its leader since the node started,
	// or the node holds none; it cannot tell who a request speaks for.
	// Retry (through another node).
	ErrCatchingUp = errors.New("auth: this node's copy of clients and sessions is catching up; retry")
	// ErrNotAttached: a change before Attach.
	ErrNotAttached = errors.New("auth: not attached to a replica node")
)

// ThrottledError says how long to wait before the next login attempt.
type ThrottledError struct {
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("auth: too many failed logins; retry in %ds", retrySeconds(e.RetryAfter))
}

// Unwrap makes errors.Is(err, ErrThrottled) true.
func (e *ThrottledError) Unwrap() error { return ErrThrottled }

// retrySeconds rounds a wait up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// HasTasksError counts the tasks that keep a client from being
// deregistered. Counting stops at MaxCountedTasks; More says there are
// more.
type HasTasksError struct {
	Client string
	Count  int
	More   bool
}

func (e *HasTasksError) Error() string {
	count := fmt.Sprintf("%d task", e.Count)
	if e.Count != 1 {
		count += "s"
	}
	if e.More {
		count += " or more"
	}
	return fmt.Sprintf("auth: client %q still has %s; cancel them first", e.Client, count)
}

// Unwrap makes errors.Is(err, ErrHasTasks) true.
func (e *HasTasksError) Unwrap() error { return ErrHasTasks }

// invalidField is a *scheduler.FieldError.
func invalidField(field, rule string, args ...any) error {
	return &scheduler.FieldError{Field: field, Rule: fmt.Sprintf(rule, args...)}
}

package delivery

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

var (
	// ErrClosed: the engine is closing or closed. The attempt did not
	// reach the endpoint, or was cut short. It is a local refusal
	// (errors.Is(err, scheduler.ErrNotAttempted)): the scheduler tries
	// again later without counting an attempt.
	ErrClosed error = &refusal{"delivery: engine closed"}
	// ErrPoolFull: the attempt's dispatch pool had MaxQueued attempts
	// waiting. A local refusal, like ErrClosed.
	ErrPoolFull error = &refusal{"delivery: dispatch pool queue is full"}
	// ErrTimeout: no acknowledgement within the attempt's timeout.
	ErrTimeout = errors.New("delivery: timed out")
	// ErrUnreachable: the endpoint could not be reached, or the connection
	// broke before it answered.
	ErrUnreachable = errors.New("delivery: endpoint unreachable")
	// ErrRejected: the endpoint answered, but not with an acknowledgement:
	// an HTTP status other than 2xx, an Ack with ok false, a gRPC error.
	ErrRejected = errors.New("delivery: endpoint rejected the delivery")
	// ErrNoCallback: neither the task nor its client has a callback.
	ErrNoCallback = errors.New("delivery: no callback configured")
	// ErrUnknownClient: the task's client is not registered.
	ErrUnknownClient = errors.New("delivery: unknown client")
	// ErrInvalidCallback: the effective callback cannot be used (an
	// unknown protocol, an endpoint that does not parse, a payload too big
	// for a UDP datagram).
	ErrInvalidCallback = errors.New("delivery: invalid callback")
)

// refusal is an attempt refused before it reached its endpoint, for a
// reason that says nothing about the endpoint.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }

// Is makes a refusal a scheduler.ErrNotAttempted.
func (e *refusal) Is(target error) bool { return target == scheduler.ErrNotAttempted }

// permanentError marks a failure that no retry can fix: the scheduler
// dead-letters the occurrence at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err: err} }

// IsPermanent reports whether err says retrying cannot help.
func IsPermanent(err error) bool {
	_, ok := errors.AsType[*permanentError](err)
	return ok
}

// StatusError is an HTTP answer other than 2xx. It holds the status only:
// the response body is never read into errors, which clients see in
// their dead letters, so a callback aimed at an internal service reveals
// nothing of what it answers.
type StatusError struct {
	Code int
	// RetryAfter is the delay a 429 or 503 asked for (Retry-After), or 0.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("delivery: HTTP %d %s", e.Code, http.StatusText(e.Code))
}

// Unwrap makes errors.Is(err, ErrRejected) true.
func (e *StatusError) Unwrap() error { return ErrRejected }

// retryableStatus says what each HTTP status does: 2xx acknowledges (not
// asked here); 408, 425, 429 and every 5xx are retried; every other
// status, including 3xx (redirects are not followed), fails for good.
func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return true
	case code >= 500 && code <= 599:
		return true
	}
	return false
}

// Outcomes of attempts, as metric labels, indexed by outcomeOf.
var outcomes = []string{"ok", "rejected", "timeout", "unreachable", "overloaded", "invalid", "closed"}

// outcomeOf classifies an attempt's result: an index into outcomes.
func outcomeOf(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrRejected):
		return 1
	case errors.Is(err, ErrTimeout):
		return 2
	case errors.Is(err, ErrUnreachable):
		return 3
	case errors.Is(err, ErrPoolFull):
		return 4
	case errors.Is(err, ErrClosed):
		return 6
	}
	return 5
}

// dialError classifies a failed connection: a destination the callback
// policy denies fails for good, anything else is unreachable for now.
func dialError(err error) error {
	if errors.Is(err, egress.ErrDenied) {
		return permanent(err)
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, err)
}

package client

import (
	"errors"
	"fmt"
	"strings"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Sentinels for the server's status codes. A failed request returns an
// *Error whose Status picks one of them, so errors.Is(err, ErrNotFound)
// works on any error a method returns.
var (
	// ErrInvalidRequest: a field breaks a rule; Error.Field names it.
	ErrInvalidRequest = errors.New("client: invalid request")
	// ErrUnauthorized: no session, an unknown session, a wrong password,
	// or an operation the client may not perform.
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrSessionExpired: the session expired; log in again. A Client with
	// credentials does so by itself and retries once.
	ErrSessionExpired = errors.New("client: session expired")
	// ErrNotFound: no such task, dead letter, group or client for this
	// caller. Other clients' objects are not found either.
	ErrNotFound = errors.New("client: not found")
	// ErrBusy: the server is overloaded; retry later.
	ErrBusy = errors.New("client: server busy")
	// ErrGroupFull: the group has too many waiting tasks.
	ErrGroupFull = errors.New("client: group full")
	// ErrConflict: the request clashes with the current state, such as a
	// task whose delivery is under way.
	ErrConflict = errors.New("client: conflict")
	// ErrInternal: a server fault; the request may or may not have taken
	// effect.
	ErrInternal = errors.New("client: internal server error")
	// ErrNotLeader: a node of a cluster that does not lead the request's
	// shard refused it (raw TCP requests that ask to be routed only). A
	// routing Client sends such requests to the leader itself, so its
	// callers do not see it.
	ErrNotLeader = errors.New("client: not the shard's leader")
	// ErrUnknownStatus: the server answered with a status this client does
	// not know.
	ErrUnknownStatus = errors.New("client: unknown status")
)

// Errors of the client itself.
var (
	// ErrConnectionLost: the connection broke while the request was in
	// flight. The request may or may not have taken effect; retry it with
	// an idempotency key to be safe. The error also wraps the cause, which
	// is an *Error when the server closed the connection with an error
	// frame.
	ErrConnectionLost = errors.New("client: connection lost; the request may or may not have taken effect")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")
	// ErrProtocol: the server sent something the protocol does not allow,
	// such as a response without a body.
	ErrProtocol = errors.New("client: protocol violation")
)

var statusErrors = map[boomerangv1.Status]error{
	boomerangv1.Status_STATUS_INVALID_REQUEST: ErrInvalidRequest,
	boomerangv1.Status_STATUS_UNAUTHORIZED:    ErrUnauthorized,
	boomerangv1.Status_STATUS_SESSION_EXPIRED: ErrSessionExpired,
	boomerangv1.Status_STATUS_NOT_FOUND:       ErrNotFound,
	boomerangv1.Status_STATUS_BUSY:            ErrBusy,
	boomerangv1.Status_STATUS_GROUP_FULL:      ErrGroupFull,
	boomerangv1.Status_STATUS_CONFLICT:        ErrConflict,
	boomerangv1.Status_STATUS_INTERNAL:        ErrInternal,
	boomerangv1.Status_STATUS_NOT_LEADER:      ErrNotLeader,
}

// Error is a request the server refused, or a connection it closed, with
// the status, message and offending field it gave.
type Error struct {
	Status  boomerangv1.Status
	Message string // for humans, from the server
	Field   string // INVALID_REQUEST: the field that broke a rule
}

func newError(e *boomerangv1.Error) *Error {
	return &Error{Status: e.GetStatus(), Message: e.GetMessage(), Field: e.GetField()}
}

// wire is e as the server sends it.
func (e *Error) wire() *boomerangv1.Error {
	return &boomerangv1.Error{Status: e.Status, Message: e.Message, Field: e.Field}
}

// Error reads like "client: not found: task 42 not found".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Unwrap().Error())
	if e.Field != "" && !strings.Contains(e.Message, e.Field) {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel for the status, so errors.Is matches it.
func (e *Error) Unwrap() error {
	if s, ok := statusErrors[e.Status]; ok {
		return s
	}
	return ErrUnknownStatus
}

// StatusOf returns the status of a failed request: the Status of the
// *Error in err's chain, STATUS_OK for nil, and STATUS_UNSPECIFIED for
// errors that did not come from the server (a lost connection, a
// context deadline).
func StatusOf(err error) boomerangv1.Status {
	if err == nil {
		return boomerangv1.Status_STATUS_OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return boomerangv1.Status_STATUS_UNSPECIFIED
}

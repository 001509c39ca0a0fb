package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

var (
	// ErrAdminOnly: an operation only admins may run.
	ErrAdminOnly = errors.New("server: only an admin may do this")
	// ErrOtherClient: a non-admin named another client in a list or group
	// request.
	ErrOtherClient = errors.New("server: only an admin may name another client")
	// ErrFrame: a raw TCP frame that breaks the framing (too large, cut
	// short, a bad length prefix, an envelope that does not decode). The
	// connection is closed after an error frame.
	ErrFrame = errors.New("server: broken frame")
	// ErrTimeout: a raw TCP connection sent no frame within the handshake
	// or idle timeout.
	ErrTimeout = errors.New("server: connection timed out")
	// ErrStopping: the server is shutting down.
	ErrStopping = errors.New("server: shutting down")
	// ErrTooManyConnections: the raw TCP listener is at its connection
	// limit.
	ErrTooManyConnections = errors.New("server: too many connections")
	// ErrTooManyPendingLogins: the raw TCP listener has as many
	// connections waiting to log in as it allows, in all or from the
	// connection's source address.
	ErrTooManyPendingLogins = errors.New("server: too many connections waiting to log in")
	// ErrReadOnly: a read-only client asked for a change.
	ErrReadOnly = errors.New("server: a read-only client may not change anything")
	// ErrTooLarge: an HTTP request body over the limit.
	ErrTooLarge = errors.New("server: request too large")
)

// statusRules is THE table from internal errors to wire status codes and
// human messages, for both transports. The first rule whose error matches
// (errors.Is) wins, so the more specific errors come first. A message of
// "" keeps the error's own text, less its package prefixes.
var statusRules = []struct {
	err     error
	status  boomerangv1.Status
	message string
}{
	{scheduler.ErrInvalid, boomerangv1.Status_STATUS_INVALID_REQUEST, ""},
	{ErrFrame, boomerangv1.Status_STATUS_INVALID_REQUEST, ""},
	{ErrTimeout, boomerangv1.Status_STATUS_INVALID_REQUEST, ""},
	{ErrTooLarge, boomerangv1.Status_STATUS_INVALID_REQUEST, ""},

	{auth.ErrNoSession, boomerangv1.Status_STATUS_UNAUTHORIZED, "no session; log in first"},
	{auth.ErrUnknownSession, boomerangv1.Status_STATUS_UNAUTHORIZED, "unknown session; log in again"},
	{auth.ErrInvalidCredentials, boomerangv1.Status_STATUS_UNAUTHORIZED, "invalid client id or password"},
	{auth.ErrThrottled, boomerangv1.Status_STATUS_UNAUTHORIZED, ""},
	{ErrAdminOnly, boomerangv1.Status_STATUS_UNAUTHORIZED, "only an admin may do this"},
	{ErrReadOnly, boomerangv1.Status_STATUS_UNAUTHORIZED, "a read-only client may not change anything"},
	{ErrOtherClient, boomerangv1.Status_STATUS_UNAUTHORIZED, "only an admin may name another client"},

	{auth.ErrSessionExpired, boomerangv1.Status_STATUS_SESSION_EXPIRED, "session expired; log in again"},

	{scheduler.ErrNotFound, boomerangv1.Status_STATUS_NOT_FOUND, "not found"},
	{auth.ErrNotFound, boomerangv1.Status_STATUS_NOT_FOUND, "no such client"},

	{scheduler.ErrInFlight, boomerangv1.Status_STATUS_CONFLICT, "a delivery attempt is under way; retry when it ends"},
	{scheduler.ErrNotBlocked, boomerangv1.Status_STATUS_CONFLICT, "the group is not blocked"},
	{auth.ErrExists, boomerangv1.Status_STATUS_CONFLICT, "client already exists"},
	{auth.ErrLastAdmin, boomerangv1.Status_STATUS_CONFLICT, "cannot remove the last admin"},
	{auth.ErrHasTasks, boomerangv1.Status_STATUS_CONFLICT, ""},

	{scheduler.ErrGroupFull, boomerangv1.Status_STATUS_GROUP_FULL, "the group holds its limit of tasks; retry once some are delivered"},

	// A store failure stops the scheduler, which then reports ErrClosed
	// wrapping it: that is a fault, not a shutdown.
	{store.ErrFailed, boomerangv1.Status_STATUS_INTERNAL, "storage failure; the request may or may not have taken effect"},
	{store.ErrCorrupt, boomerangv1.Status_STATUS_INTERNAL, "stored data is corrupt; the request may or may not have taken effect"},
	{store.ErrInvalid, boomerangv1.Status_STATUS_INTERNAL, "a record could not be stored; the request may or may not have taken effect"},

	{scheduler.ErrBusy, boomerangv1.Status_STATUS_BUSY, "server busy; retry later"},
	{scheduler.ErrNotLeader, boomerangv1.Status_STATUS_BUSY, "the task's shard is changing leaders; retry (the request may or may not have taken effect)"},
	{ErrTooManyConnections, boomerangv1.Status_STATUS_BUSY, "too many connections; retry later"},
	{ErrTooManyPendingLogins, boomerangv1.Status_STATUS_BUSY, "too many connections waiting to log in; retry later"},
	{auth.ErrLoginBusy, boomerangv1.Status_STATUS_BUSY, "too many logins; retry later"},
	{auth.ErrCatchingUp, boomerangv1.Status_STATUS_BUSY, "this node's copy of clients and sessions is catching up; retry"},
	{auth.ErrNoLeader, boomerangv1.Status_STATUS_BUSY, "clients and sessions cannot change now (no leader); retry (the request may or may not have taken effect)"},
	{scheduler.ErrClosed, boomerangv1.Status_STATUS_BUSY, "server is shutting down; retry later"},
	{store.ErrClosed, boomerangv1.Status_STATUS_BUSY, "server is shutting down; retry later"},
	{ErrStopping, boomerangv1.Status_STATUS_BUSY, "server is shutting down; retry later"},
	{context.DeadlineExceeded, boomerangv1.Status_STATUS_BUSY, "deadline exceeded; the request may or may not have taken effect"},
	{context.Canceled, boomerangv1.Status_STATUS_BUSY, "request cancelled; it may or may not have taken effect"},
}

// connectCodes maps wire status codes to Connect (and gRPC) codes.
var connectCodes = map[boomerangv1.Status]connect.Code{
	boomerangv1.Status_STATUS_INVALID_REQUEST: connect.CodeInvalidArgument,
	boomerangv1.Status_STATUS_UNAUTHORIZED:    connect.CodeUnauthenticated,
	boomerangv1.Status_STATUS_SESSION_EXPIRED: connect.CodeUnauthenticated,
	boomerangv1.Status_STATUS_NOT_FOUND:       connect.CodeNotFound,
	boomerangv1.Status_STATUS_BUSY:            connect.CodeResourceExhausted,
	boomerangv1.Status_STATUS_GROUP_FULL:      connect.CodeResourceExhausted,
	boomerangv1.Status_STATUS_CONFLICT:        connect.CodeFailedPrecondition,
	boomerangv1.Status_STATUS_INTERNAL:        connect.CodeInternal,
	boomerangv1.Status_STATUS_NOT_LEADER:      connect.CodeUnavailable,
}

// fieldNames renames the scheduler's field names to the request fields of
// the wire contract.
var fieldNames = map[string]string{
	"delay":    "delay_ms",
	"due time": "fire_at_ms",
	"interval": "repeat_interval_ms",
	"limit":    "page_size",
}

// subjectError names what a failure is about ("task 42"), for the message.
type subjectError struct {
	subject string
	err     error
}

func (e *subjectError) Error() string { return e.subject + ": " + e.err.Error() }
func (e *subjectError) Unwrap() error { return e.err }

// about wraps err with the subject it concerns.
func about(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &subjectError{subject: fmt.Sprintf(format, args...), err: err}
}

// ErrorOf turns an error from any layer into the wire Error: its status,
// a human message and, for INVALID_REQUEST, the offending field. nil is
// OK.
func ErrorOf(err error) *boomerangv1.Error {
	if err == nil {
		return &boomerangv1.Error{Status: boomerangv1.Status_STATUS_OK}
	}
	var re *remoteErr
	if errors.As(err, &re) {
		return proto.CloneOf(re.wire) // the shard's leader answered
	}
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		return nl.wire()
	}
	e := &boomerangv1.Error{Status: boomerangv1.Status_STATUS_INTERNAL}
	var fe *scheduler.FieldError
	if errors.As(err, &fe) {
		e.Status, e.Field = boomerangv1.Status_STATUS_INVALID_REQUEST, fe.Field
		if name, ok := fieldNames[fe.Field]; ok {
			e.Field = name
		}
		e.Message = fmt.Sprintf("invalid %s: %s", e.Field, fe.Rule)
		return e
	}
	// The subject, if any, leads the message; the error's own text, used
	// when the rule has no message, follows without it.
	subject, inner := "", err
	var se *subjectError
	if errors.As(err, &se) {
		subject, inner = se.subject+": ", se.err
	}
	e.Message = "internal error: " + strip(inner.Error())
	for _, r := range statusRules {
		if errors.Is(err, r.err) {
			e.Status, e.Message = r.status, strip(inner.Error())
			if r.message != "" {
				e.Message = r.message
			}
			break
		}
	}
	e.Message = subject + e.Message
	return e
}

// StatusOf returns the wire status of err.
func StatusOf(err error) boomerangv1.Status { return ErrorOf(err).Status }

// ConnectError turns err into a Connect error with the code for its
// status and the wire Error attached as a detail, so Connect and gRPC
// clients see the exact status and field.
func ConnectError(err error) *connect.Error {
	e := ErrorOf(err)
	code, ok := connectCodes[e.Status]
	if !ok {
		code = connect.CodeInternal
	}
	ce := connect.NewError(code, errors.New(e.Message))
	if detail, derr := connect.NewErrorDetail(e); derr == nil {
		ce.AddDetail(detail)
	}
	return ce
}

// packagePrefixes are removed from messages: clients need not know which
// package said it.
var packagePrefixes = strings.NewReplacer("server: ", "", "auth: ", "", "scheduler: ", "", "store: ", "", "delivery: ", "", "dispatch: ", "", "egress: ", "")

func strip(msg string) string { return packagePrefixes.Replace(msg) }

// statusLabel is a status's name without the STATUS_ prefix, as used in
// metrics: "OK", "INVALID_REQUEST".
func statusLabel(s boomerangv1.Status) string {
	return strings.TrimPrefix(s.String(), "STATUS_")
}

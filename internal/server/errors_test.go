package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

func TestErrorTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     error
		status  boomerangv1.Status
		message string
		field   string
	}{
		{nil, boomerangv1.Status_STATUS_OK, "", ""},
		{&scheduler.FieldError{Field: "delay", Rule: "must not be negative"}, boomerangv1.Status_STATUS_INVALID_REQUEST, "invalid delay_ms: must not be negative", "delay_ms"},
		{fmt.Errorf("wrapped: %w", &scheduler.FieldError{Field: "group", Rule: "too long"}), boomerangv1.Status_STATUS_INVALID_REQUEST, "invalid group: too long", "group"},
		{auth.ErrNoSession, boomerangv1.Status_STATUS_UNAUTHORIZED, "no session; log in first", ""},
		{auth.ErrUnknownSession, boomerangv1.Status_STATUS_UNAUTHORIZED, "unknown session; log in again", ""},
		{auth.ErrInvalidCredentials, boomerangv1.Status_STATUS_UNAUTHORIZED, "invalid client id or password", ""},
		{&auth.ThrottledError{RetryAfter: 1500 * time.Millisecond}, boomerangv1.Status_STATUS_UNAUTHORIZED, "too many failed logins; retry in 2s", ""},
		{ErrAdminOnly, boomerangv1.Status_STATUS_UNAUTHORIZED, "only an admin may do this", ""},
		{ErrOtherClient, boomerangv1.Status_STATUS_UNAUTHORIZED, "only an admin may name another client", ""},
		{auth.ErrSessionExpired, boomerangv1.Status_STATUS_SESSION_EXPIRED, "session expired; log in again", ""},
		{about(scheduler.ErrNotFound, "task %d", 42), boomerangv1.Status_STATUS_NOT_FOUND, "task 42: not found", ""},
		{about(fmt.Errorf("%w: %q", auth.ErrNotFound, "x"), "client %q", "x"), boomerangv1.Status_STATUS_NOT_FOUND, `client "x": no such client`, ""},
		{scheduler.ErrInFlight, boomerangv1.Status_STATUS_CONFLICT, "a delivery attempt is under way; retry when it ends", ""},
		{scheduler.ErrNotBlocked, boomerangv1.Status_STATUS_CONFLICT, "the group is not blocked", ""},
		{auth.ErrExists, boomerangv1.Status_STATUS_CONFLICT, "client already exists", ""},
		{auth.ErrLastAdmin, boomerangv1.Status_STATUS_CONFLICT, "cannot remove the last admin", ""},
		{&auth.HasTasksError{Client: "a", Count: 3}, boomerangv1.Status_STATUS_CONFLICT, `client "a" still has 3 tasks; cancel them first`, ""},
		{scheduler.ErrGroupFull, boomerangv1.Status_STATUS_GROUP_FULL, "the group holds its limit of tasks; retry once some are delivered", ""},
		{scheduler.ErrBusy, boomerangv1.Status_STATUS_BUSY, "server busy; retry later", ""},
		{scheduler.ErrClosed, boomerangv1.Status_STATUS_BUSY, "server is shutting down; retry later", ""},
		{fmt.Errorf("%w: %w", scheduler.ErrClosed, store.ErrFailed), boomerangv1.Status_STATUS_INTERNAL, "storage failure; the request may or may not have taken effect", ""},
		{fmt.Errorf("read: %w", store.ErrCorrupt), boomerangv1.Status_STATUS_INTERNAL, "stored data is corrupt; the request may or may not have taken effect", ""},
		{context.DeadlineExceeded, boomerangv1.Status_STATUS_BUSY, "deadline exceeded; the request may or may not have taken effect", ""},
		{fmt.Errorf("%w: frame of 9 bytes exceeds the limit of 8", ErrFrame), boomerangv1.Status_STATUS_INVALID_REQUEST, "broken frame: frame of 9 bytes exceeds the limit of 8", ""},
		{ErrTooManyConnections, boomerangv1.Status_STATUS_BUSY, "too many connections; retry later", ""},
		{errors.New("disk on fire"), boomerangv1.Status_STATUS_INTERNAL, "internal error: disk on fire", ""},
	} {
		e := ErrorOf(tc.err)
		if e.Status != tc.status || e.Message != tc.message || e.Field != tc.field {
			t.Errorf("ErrorOf(%v) = %v %q field %q, want %v %q field %q", tc.err, e.Status, e.Message, e.Field, tc.status, tc.message, tc.field)
		}
	}
}

func TestConnectCodes(t *testing.T) {
	t.Parallel()
	for status := range boomerangv1.Status_name {
		s := boomerangv1.Status(status)
		if s == boomerangv1.Status_STATUS_UNSPECIFIED || s == boomerangv1.Status_STATUS_OK {
			continue
		}
		if _, ok := connectCodes[s]; !ok {
			t.Errorf("status %v has no Connect code", s)
		}
	}
	ce := ConnectError(about(scheduler.ErrInFlight, "task %d", 7))
	if ce.Code() != connect.CodeFailedPrecondition || ce.Message() != "task 7: a delivery attempt is under way; retry when it ends" || len(ce.Details()) != 1 {
		t.Fatalf("ConnectError = %v (%d details)", ce, len(ce.Details()))
	}
	v, err := ce.Details()[0].Value()
	if e, ok := v.(*boomerangv1.Error); err != nil || !ok || e.Status != boomerangv1.Status_STATUS_CONFLICT {
		t.Fatalf("detail %v, %v", v, err)
	}
}

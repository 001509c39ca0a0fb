package server

import (
	"context"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// CancelTasks cancels every task of a client, or of one of its groups,
// except those being delivered. A read-only client may only count them
// (dry run).
func (s *Service) CancelTasks(ctx context.Context, p auth.Principal, req *boomerangv1.CancelTasksRequest) (*boomerangv1.CancelTasksResponse, error) {
	if !req.DryRun {
		if err := writable(p); err != nil {
			return nil, err
		}
	}
	client, err := owner(p, req.Client, false)
	if err == nil {
		err = checkName("group", req.Group, scheduler.MaxGroupLen)
	}
	if err != nil {
		return nil, err
	}
	r, err := s.sched.CancelTasks(ctx, caller(p), client, req.Group, req.DryRun)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.CancelTasksResponse{Matched: uint64(r.Matched), Cancelled: uint64(r.Done), Skipped: uint64(r.Skipped)}, nil
}

// PurgeDeadLetters deletes every dead letter matching a filter, except
// groups' blocked heads. A read-only client may only count them (dry
// run).
func (s *Service) PurgeDeadLetters(ctx context.Context, p auth.Principal, req *boomerangv1.PurgeDeadLettersRequest) (*boomerangv1.PurgeDeadLettersResponse, error) {
	if !req.DryRun {
		if err := writable(p); err != nil {
			return nil, err
		}
	}
	client, err := owner(p, req.Client, true)
	if err == nil {
		err = firstError(
			checkName("group", req.Group, scheduler.MaxGroupLen),
			checkName("error_contains", req.ErrorContains, scheduler.MaxErrorLen),
		)
	}
	if err == nil && req.FailedBeforeMs < 0 {
		err = invalid("failed_before_ms", "must not be negative, got %d", req.FailedBeforeMs)
	}
	if err != nil {
		return nil, err
	}
	f := scheduler.DeadLetterFilter{Client: client, Group: req.Group, ErrorContains: req.ErrorContains}
	if req.FailedBeforeMs > 0 {
		f.FailedBefore = time.UnixMilli(req.FailedBeforeMs)
	}
	r, err := s.sched.PurgeDeadLetters(ctx, caller(p), f, req.DryRun)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.PurgeDeadLettersResponse{Matched: uint64(r.Matched), Deleted: uint64(r.Done), Skipped: uint64(r.Skipped)}, nil
}

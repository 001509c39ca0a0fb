package server

import (
	"context"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

// ListDeadLetters lists dead letters in id order, a page at a time, cut
// short like ListTasks.
// In a cluster a list or a search is read from every shard's leader
// (fanout.go).
func (s *Service) ListDeadLetters(ctx context.Context, p auth.Principal, req *boomerangv1.ListDeadLettersRequest) (*boomerangv1.ListDeadLettersResponse, error) {
	f := forwarderOf(ctx)
	if f == nil {
		return s.listDeadLettersHere(ctx, p, req)
	}
	limit, err := pageSize(req.PageSize)
	if err != nil {
		return nil, err
	}
	return s.listDeadLettersEverywhere(ctx, f, p, req, limit)
}

// listDeadLettersHere is ListDeadLetters from the shards this node hosts.
func (s *Service) listDeadLettersHere(ctx context.Context, p auth.Principal, req *boomerangv1.ListDeadLettersRequest) (*boomerangv1.ListDeadLettersResponse, error) {
	client, err := owner(p, req.Client, true)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(req.PageSize)
	if err != nil {
		return nil, err
	}
	if req.Group != "" || req.FailedBeforeMs != 0 || req.ErrorContains != "" || len(req.PayloadContains) > 0 {
		return s.searchDeadLetters(ctx, p, req, client, limit)
	}
	dls, next, err := s.sched.DeadLetters(ctx, caller(p), client, req.PageToken, limit)
	if err != nil {
		return nil, err
	}
	resp := &boomerangv1.ListDeadLettersResponse{DeadLetters: make([]*boomerangv1.DeadLetter, len(dls)), NextPageToken: next}
	for i, d := range dls {
		resp.DeadLetters[i] = deadLetterToWire(d)
	}
	if n := fit(resp.DeadLetters, s.listBudget); n < len(resp.DeadLetters) {
		resp.DeadLetters, resp.NextPageToken = resp.DeadLetters[:n], store.DeadLetterID(dls[n-1])
	}
	return resp, nil
}

// GetDeadLetter returns one dead letter.
func (s *Service) GetDeadLetter(ctx context.Context, p auth.Principal, req *boomerangv1.GetDeadLetterRequest) (*boomerangv1.GetDeadLetterResponse, error) {
	if err := checkID("id", req.Id); err != nil {
		return nil, err
	}
	d, err := s.sched.DeadLetter(ctx, caller(p), req.Id)
	if err != nil {
		return nil, about(err, "dead letter %d", req.Id)
	}
	return &boomerangv1.GetDeadLetterResponse{DeadLetter: deadLetterToWire(d)}, nil
}

// ReplayDeadLetter delivers a dead letter again with fresh attempts, as a
// task it returns: due now, behind its group's waiting tasks, or, for a
// group's blocking head, as UnblockGroup does, with its own due time and
// place at the head.
func (s *Service) ReplayDeadLetter(ctx context.Context, p auth.Principal, req *boomerangv1.ReplayDeadLetterRequest) (*boomerangv1.ReplayDeadLetterResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	if err := checkID("id", req.Id); err != nil {
		return nil, err
	}
	view, err := s.sched.Replay(ctx, caller(p), req.Id)
	if err != nil {
		return nil, about(err, "dead letter %d", req.Id)
	}
	return &boomerangv1.ReplayDeadLetterResponse{Task: taskToWire(view)}, nil
}

// DeleteDeadLetter drops a dead letter; a group's blocked head is skipped.
func (s *Service) DeleteDeadLetter(ctx context.Context, p auth.Principal, req *boomerangv1.DeleteDeadLetterRequest) (*boomerangv1.DeleteDeadLetterResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	if err := checkID("id", req.Id); err != nil {
		return nil, err
	}
	if err := s.sched.DeleteDeadLetter(ctx, caller(p), req.Id); err != nil {
		return nil, about(err, "dead letter %d", req.Id)
	}
	return &boomerangv1.DeleteDeadLetterResponse{}, nil
}

// GetGroup returns a group's state. A client names only its own groups
// (client ""); an admin may name any client's.
func (s *Service) GetGroup(ctx context.Context, p auth.Principal, req *boomerangv1.GetGroupRequest) (*boomerangv1.GetGroupResponse, error) {
	client, group, err := groupOf(p, req.Client, req.Group)
	if err != nil {
		return nil, err
	}
	g, err := s.sched.Group(ctx, caller(p), client, group)
	if err != nil {
		return nil, about(err, "group %q of client %q", group, client)
	}
	wire := groupToWire(g)
	wire.RateLimit = limitToWire(s.auth.GroupRate(client, group))
	return &boomerangv1.GetGroupResponse{Group: wire}, nil
}

// UnblockGroup delivers a blocked group's dead-lettered head again, then
// lets the group go on.
func (s *Service) UnblockGroup(ctx context.Context, p auth.Principal, req *boomerangv1.UnblockGroupRequest) (*boomerangv1.UnblockGroupResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	client, group, err := groupOf(p, req.Client, req.Group)
	if err != nil {
		return nil, err
	}
	view, err := s.sched.Unblock(ctx, caller(p), client, group)
	if err != nil {
		return nil, about(err, "group %q of client %q", group, client)
	}
	return &boomerangv1.UnblockGroupResponse{Task: taskToWire(view)}, nil
}

// SkipGroup lets a blocked group go on, leaving its head in the dead
// letter queue.
func (s *Service) SkipGroup(ctx context.Context, p auth.Principal, req *boomerangv1.SkipGroupRequest) (*boomerangv1.SkipGroupResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	client, group, err := groupOf(p, req.Client, req.Group)
	if err != nil {
		return nil, err
	}
	if err := s.sched.Skip(ctx, caller(p), client, group); err != nil {
		return nil, about(err, "group %q of client %q", group, client)
	}
	return &boomerangv1.SkipGroupResponse{}, nil
}

func groupOf(p auth.Principal, named, group string) (string, string, error) {
	client, err := owner(p, named, false)
	if err != nil {
		return "", "", err
	}
	return client, group, firstError(checkRequired("group", group), checkName("group", group, scheduler.MaxGroupLen))
}

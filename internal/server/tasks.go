package server

import (
	"context"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// RegisterTask schedules a task of the caller. Its dispatch mode is the
// task's, else the client's default, else NEXT_ON_ERROR; its callback is
// the task's override over the client's, checked here.
func (s *Service) RegisterTask(ctx context.Context, p auth.Principal, req *boomerangv1.RegisterTaskRequest) (*boomerangv1.RegisterTaskResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	o, err := s.registrant(p.Client)
	if err != nil {
		return nil, err
	}
	r, err := o.registration(req, s.clock.Now())
	if err != nil {
		return nil, err
	}
	view, created, err := s.sched.Register(ctx, r)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.RegisterTaskResponse{Task: taskToWire(view), Created: created, Replaced: replaced(r, created)}, nil
}

// replaced reports whether a registration replaced a waiting task: with a
// replace key (never given with an idempotency key), only then is no task
// created.
func replaced(r scheduler.RegisterRequest, created bool) bool {
	return r.ReplaceKey != "" && !created
}

// registrant is what registering tasks for one client needs to know of
// it, looked up once per request.
type registrant struct {
	s        *Service
	client   string
	callback *storepb.Callback // the client's default callback
	mode     storepb.DispatchMode
}

func (s *Service) registrant(client string) (registrant, error) {
	cb, mode, err := s.auth.Defaults(client)
	if err != nil {
		return registrant{}, about(err, "client %q", client)
	}
	return registrant{s: s, client: client, callback: cb, mode: mode}, nil
}

// registration checks a registration and turns it into the scheduler's,
// with the due time decided from now and the client's defaults applied.
func (o registrant) registration(req *boomerangv1.RegisterTaskRequest, now time.Time) (scheduler.RegisterRequest, error) {
	r := scheduler.RegisterRequest{
		Client:         o.client,
		Group:          req.Group,
		Payload:        req.Payload,
		Interval:       time.Duration(req.RepeatIntervalMs) * time.Millisecond,
		Mode:           toStoreMode(req.Mode),
		Retry:          retryFromWire(req.Retry),
		Callback:       callbackFromWire(req.Callback),
		IdempotencyKey: req.IdempotencyKey,
		Cron:           req.Cron,
		TimeZone:       req.TimeZone,
		ReplaceKey:     req.ReplaceKey,
		Debounce:       time.Duration(req.DebounceMs) * time.Millisecond,
		MaxWait:        time.Duration(req.MaxWaitMs) * time.Millisecond,
	}
	err := firstError(
		checkPayload(req.Payload, o.s.maxPayload),
		checkInterval("repeat_interval_ms", req.RepeatIntervalMs),
		checkName("group", req.Group, scheduler.MaxGroupLen),
		checkName("idempotency_key", req.IdempotencyKey, scheduler.MaxIdempotencyKeyLen),
		checkName("replace_key", req.ReplaceKey, scheduler.MaxReplaceKeyLen),
		checkDelay("debounce_ms", req.DebounceMs),
		checkDelay("max_wait_ms", req.MaxWaitMs),
		checkMode("mode", req.Mode),
		checkRetry("retry.", req.Retry),
		checkCallbackOverride(req.Callback),
	)
	if err != nil {
		return r, err
	}
	switch w := req.When.(type) {
	case *boomerangv1.RegisterTaskRequest_DelayMs:
		if err := checkDelay("delay_ms", w.DelayMs); err != nil {
			return r, err
		}
		// The due time is decided here, from the same clock as the
		// checks, rather than by the scheduler after queueing.
		r.At = now.Add(time.Duration(w.DelayMs) * time.Millisecond)
	case *boomerangv1.RegisterTaskRequest_FireAtMs:
		if err := checkFireAt("fire_at_ms", w.FireAtMs, now); err != nil {
			return r, err
		}
		r.At = time.UnixMilli(w.FireAtMs)
	}
	if r.Mode == storepb.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		r.Mode = o.mode
	}
	if r.Mode == storepb.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		r.Mode = storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR
	}
	if r.Callback == nil {
		// The client's own callback passed its checks when it was set.
		return r, delivery.CheckPayload(o.callback, len(req.Payload))
	}
	effective := delivery.Effective(r.Callback, o.callback)
	if err := delivery.ValidateCallback(effective, len(req.Payload)); err != nil {
		return r, err
	}
	return r, checkCallbackPolicy(o.s.egress.Narrow(o.s.auth.CallbackRules(o.client)), effective)
}

// UpdateTask changes a task's payload, due time or interval. A new due
// time starts a new occurrence with fresh attempts.
func (s *Service) UpdateTask(ctx context.Context, p auth.Principal, req *boomerangv1.UpdateTaskRequest) (*boomerangv1.UpdateTaskResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	r := scheduler.UpdateRequest{ID: req.Id, Payload: req.Payload}
	if err := firstError(checkID("id", req.Id), checkPayload(req.Payload, s.maxPayload)); err != nil {
		return nil, err
	}
	switch w := req.When.(type) {
	case *boomerangv1.UpdateTaskRequest_DelayMs:
		if err := checkDelay("delay_ms", w.DelayMs); err != nil {
			return nil, err
		}
		at := now.Add(time.Duration(w.DelayMs) * time.Millisecond)
		r.At = &at
	case *boomerangv1.UpdateTaskRequest_FireAtMs:
		if err := checkFireAt("fire_at_ms", w.FireAtMs, now); err != nil {
			return nil, err
		}
		at := time.UnixMilli(w.FireAtMs)
		r.At = &at
	}
	if req.RepeatIntervalMs != nil {
		if err := checkInterval("repeat_interval_ms", *req.RepeatIntervalMs); err != nil {
			return nil, err
		}
		d := time.Duration(*req.RepeatIntervalMs) * time.Millisecond
		r.Interval = &d
	}
	r.Cron, r.TimeZone = req.Cron, req.TimeZone
	if r.Payload == nil && r.At == nil && r.Interval == nil && r.Cron == nil {
		return nil, invalid("body", "must set payload, delay_ms, fire_at_ms, repeat_interval_ms or cron")
	}
	if len(r.Payload) > delivery.MaxUDPPayload {
		if err := s.checkUDPPayload(ctx, p, req.Id, len(r.Payload)); err != nil {
			return nil, err
		}
	}
	view, err := s.sched.Update(ctx, caller(p), r)
	if err != nil {
		return nil, about(err, "task %d", req.Id)
	}
	return &boomerangv1.UpdateTaskResponse{Task: taskToWire(view)}, nil
}

// checkUDPPayload refuses a new payload too large for a task delivered
// over UDP.
func (s *Service) checkUDPPayload(ctx context.Context, p auth.Principal, id uint64, size int) error {
	view, err := s.sched.Get(ctx, caller(p), id)
	if err != nil {
		return about(err, "task %d", id)
	}
	clientCallback, _, _ := s.auth.Defaults(view.Task.Client)
	return delivery.ValidateCallback(delivery.Effective(view.Task.Callback, clientCallback), size)
}

// CancelTask deletes a task; once it answers OK the task never fires
// again. A task whose delivery attempt is under way gives CONFLICT.
func (s *Service) CancelTask(ctx context.Context, p auth.Principal, req *boomerangv1.CancelTaskRequest) (*boomerangv1.CancelTaskResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	if err := checkID("id", req.Id); err != nil {
		return nil, err
	}
	if err := s.sched.Cancel(ctx, caller(p), req.Id); err != nil {
		return nil, about(err, "task %d", req.Id)
	}
	return &boomerangv1.CancelTaskResponse{}, nil
}

// upcomingShown is how many occurrences of a cron task after its current
// one GetTask shows.
const upcomingShown = 5

// GetTask returns a task with its live status, and a cron task's next
// occurrences.
func (s *Service) GetTask(ctx context.Context, p auth.Principal, req *boomerangv1.GetTaskRequest) (*boomerangv1.GetTaskResponse, error) {
	if err := checkID("id", req.Id); err != nil {
		return nil, err
	}
	view, err := s.sched.Get(ctx, caller(p), req.Id)
	if err != nil {
		return nil, about(err, "task %d", req.Id)
	}
	t := taskToWire(view)
	for _, at := range scheduler.Upcoming(view.Task, upcomingShown) {
		t.NextFireAtMs = append(t.NextFireAtMs, at.UnixMilli())
	}
	s.markBlocked(ctx, p, []*boomerangv1.Task{t})
	return &boomerangv1.GetTaskResponse{Task: t}, nil
}

// markBlocked shows the due tasks of blocked groups as BLOCKED by their
// group's dead letter. The scheduler keeps them queued (Get) or, as
// stored, scheduled (List); both would hide why they wait.
func (s *Service) markBlocked(ctx context.Context, p auth.Principal, tasks []*boomerangv1.Task) {
	now := s.clock.Now().UnixMilli()
	blocking := map[[2]string]uint64{} // client and group → dead letter id, 0 when not blocked
	for _, t := range tasks {
		waiting := t.Status == boomerangv1.TaskStatus_TASK_STATUS_QUEUED || t.Status == boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED
		if t.Group == "" || t.Mode == boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE || t.FireAtMs > now || !waiting {
			continue
		}
		key := [2]string{t.Client, t.Group}
		id, seen := blocking[key]
		if !seen {
			if g, err := s.sched.Group(ctx, caller(p), t.Client, t.Group); err == nil {
				id = g.BlockedTask
			}
			blocking[key] = id
		}
		if id != 0 {
			t.Status, t.BlockedByDeadLetter = boomerangv1.TaskStatus_TASK_STATUS_BLOCKED, id
		}
	}
}

// ListTasks lists tasks in id order, a page at a time. A page is also cut
// short to keep the response under the frame limit.
//
// In a cluster it is read from every shard's leader (fanout.go), one
// shard's list from its leader.
func (s *Service) ListTasks(ctx context.Context, p auth.Principal, req *boomerangv1.ListTasksRequest) (*boomerangv1.ListTasksResponse, error) {
	f := forwarderOf(ctx)
	if f == nil {
		return s.listTasksHere(ctx, p, req)
	}
	if req.Shard != nil {
		if leader, ok := f.leader(uint16(*req.Shard)); ok && int(*req.Shard) < s.sched.Shards() {
			return forwardTo[boomerangv1.ListTasksRequest, boomerangv1.ListTasksResponse](ctx, f, leader, p, req)
		}
		return s.listTasksHere(ctx, p, req)
	}
	limit, err := pageSize(req.PageSize)
	if err != nil {
		return nil, err
	}
	return s.listTasksEverywhere(ctx, f, p, req, limit)
}

// listTasksHere is ListTasks from the shards this node hosts.
func (s *Service) listTasksHere(ctx context.Context, p auth.Principal, req *boomerangv1.ListTasksRequest) (*boomerangv1.ListTasksResponse, error) {
	client, err := owner(p, req.Client, true)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(req.PageSize)
	if err != nil {
		return nil, err
	}
	q := scheduler.ListQuery{Client: client, Group: req.Group, Recurring: req.Recurring, After: req.PageToken, Limit: limit}
	if err := checkName("group", req.Group, scheduler.MaxGroupLen); err != nil {
		return nil, err
	}
	if req.DueFromMs != 0 {
		q.DueFrom = time.UnixMilli(req.DueFromMs)
	}
	if req.DueToMs != 0 {
		q.DueTo = time.UnixMilli(req.DueToMs)
	}
	if req.DueFromMs != 0 && req.DueToMs != 0 && req.DueToMs <= req.DueFromMs {
		return nil, invalid("due_to_ms", "must be after due_from_ms (%d), got %d", req.DueFromMs, req.DueToMs)
	}
	switch req.Status {
	case boomerangv1.TaskStatus_TASK_STATUS_UNSPECIFIED:
	case boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED, boomerangv1.TaskStatus_TASK_STATUS_RETRYING:
		retrying := req.Status == boomerangv1.TaskStatus_TASK_STATUS_RETRYING
		q.Retrying = &retrying
	default:
		return nil, invalid("status", "must be SCHEDULED, RETRYING or unspecified; ask GetTask for a task's live status")
	}
	if searches(req) {
		return s.searchTasks(ctx, p, req, q)
	}
	views, next, err := s.sched.List(ctx, caller(p), q)
	if err != nil {
		return nil, err
	}
	resp := &boomerangv1.ListTasksResponse{Tasks: make([]*boomerangv1.Task, len(views)), NextPageToken: next}
	for i, v := range views {
		resp.Tasks[i] = taskToWire(v)
	}
	if n := fit(resp.Tasks, s.listBudget); n < len(resp.Tasks) {
		resp.Tasks, resp.NextPageToken = resp.Tasks[:n], resp.Tasks[n-1].Id
	}
	s.markBlocked(ctx, p, resp.Tasks)
	return resp, nil
}

package server

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// panel is what the web panel's operations read beyond the scheduler:
// the in-memory history, counters and audit log, and the server's own
// description of its nodes and pools.
type panel struct {
	hist          *history
	samp          *sampler
	audit         *auditLog
	payloadSearch int
	cluster       func() *boomerangv1.GetClusterResponse
	pools         func() []*boomerangv1.PoolInfo
}

// Bounds of the panel's reads.
const (
	defaultGroupLimit   = 200
	defaultStatsPoints  = 500
	defaultBucket       = time.Minute
	defaultBuckets      = 30
	maxBuckets          = 240
	maxDueScan          = 1_000_000 // due index entries one heat map reads
	maxDeadLetterScan   = 100_000   // dead letters one filtered page or batch reads
	defaultStatsHistory = time.Hour
)

// searches reports whether a task list uses the panel's filters.
func searches(req *boomerangv1.ListTasksRequest) bool {
	return len(req.PayloadContains) > 0 || req.Shard != nil || req.Order == boomerangv1.TaskOrder_TASK_ORDER_DUE
}

// searchTasks is ListTasks with a payload search, a shard or due order.
func (s *Service) searchTasks(ctx context.Context, p auth.Principal, req *boomerangv1.ListTasksRequest, q scheduler.ListQuery) (*boomerangv1.ListTasksResponse, error) {
	sq := scheduler.SearchQuery{ListQuery: q, ByDue: req.Order == boomerangv1.TaskOrder_TASK_ORDER_DUE, AfterDue: req.PageDueMs}
	if req.Shard != nil {
		if int(*req.Shard) >= s.sched.Shards() {
			return nil, invalid("shard", "must be below %d, got %d", s.sched.Shards(), *req.Shard)
		}
		shard := uint16(*req.Shard)
		sq.Shard = &shard
	}
	if needle := req.PayloadContains; len(needle) > 0 {
		sq.Match = func(t *storepb.Task) bool { return s.payloadHas(t.Payload, needle) }
	}
	page, err := s.sched.Search(ctx, caller(p), sq)
	if err != nil {
		return nil, err
	}
	resp := &boomerangv1.ListTasksResponse{Tasks: make([]*boomerangv1.Task, len(page.Tasks)),
		NextPageToken: page.NextAfter, NextPageDueMs: page.NextDue}
	for i, v := range page.Tasks {
		resp.Tasks[i] = taskToWire(v)
	}
	if n := fit(resp.Tasks, s.listBudget); n < len(resp.Tasks) {
		resp.Tasks, resp.NextPageToken = resp.Tasks[:n], resp.Tasks[n-1].Id
		resp.NextPageDueMs = wakeOf(page.Tasks[n-1].Task, sq.ByDue)
	}
	return resp, nil
}

func wakeOf(t *storepb.Task, byDue bool) int64 {
	if !byDue {
		return 0
	}
	return store.WakeMs(t)
}

// payloadHas searches the first payloadSearch bytes of a payload.
func (s *Service) payloadHas(payload, needle []byte) bool {
	return bytes.Contains(payload[:min(len(payload), s.panel.payloadSearch)], needle)
}

// deadLetterQuery is a dead letter filter as the panel's lists and bulk
// actions use it.
type deadLetterQuery struct {
	client        string
	group         string
	failedBefore  int64
	errorContains string
	payload       []byte
}

func (s *Service) deadLetterMatch(q deadLetterQuery) func(*storepb.DeadLetter) bool {
	return func(d *storepb.DeadLetter) bool {
		switch {
		case q.group != "" && d.Task.GetGroup() != q.group,
			q.failedBefore > 0 && d.FailedMs >= q.failedBefore,
			!strings.Contains(d.LastError, q.errorContains),
			len(q.payload) > 0 && !s.payloadHas(d.Task.GetPayload(), q.payload):
			return false
		}
		return true
	}
}

func (q deadLetterQuery) check() error {
	if q.failedBefore < 0 {
		return invalid("failed_before_ms", "must not be negative, got %d", q.failedBefore)
	}
	return firstError(
		checkName("group", q.group, scheduler.MaxGroupLen),
		checkName("error_contains", q.errorContains, scheduler.MaxErrorLen),
	)
}

// scanDeadLetters passes matching dead letters after the cursor to fn in
// id order until fn declines one (returns false), reading at most
// maxDeadLetterScan. It returns the cursor past the last one read and
// not declined, and whether it stopped before the end.
func (s *Service) scanDeadLetters(ctx context.Context, p auth.Principal, q deadLetterQuery, after uint64,
	fn func(*storepb.DeadLetter) bool) (last uint64, more bool, err error) {
	match := s.deadLetterMatch(q)
	for read := 0; read < maxDeadLetterScan; {
		page, next, err := s.sched.DeadLetters(ctx, caller(p), q.client, after, store.MaxLimit)
		if err != nil {
			return 0, false, err
		}
		for _, d := range page {
			read++
			if match(d) && !fn(d) {
				return after, true, nil
			}
			after = store.DeadLetterID(d)
		}
		if next == 0 {
			return after, false, nil
		}
	}
	return after, true, nil
}

// searchDeadLetters is ListDeadLetters with the panel's filters. A page
// may hold fewer than page_size when the scan reached its bound; its
// next_page_token goes on from there.
func (s *Service) searchDeadLetters(ctx context.Context, p auth.Principal, req *boomerangv1.ListDeadLettersRequest, client string, limit int) (*boomerangv1.ListDeadLettersResponse, error) {
	q := deadLetterQuery{client: client, group: req.Group, failedBefore: req.FailedBeforeMs,
		errorContains: req.ErrorContains, payload: req.PayloadContains}
	if err := q.check(); err != nil {
		return nil, err
	}
	resp := &boomerangv1.ListDeadLettersResponse{}
	last, more, err := s.scanDeadLetters(ctx, p, q, req.PageToken, func(d *storepb.DeadLetter) bool {
		if len(resp.DeadLetters) == limit {
			return false
		}
		resp.DeadLetters = append(resp.DeadLetters, deadLetterToWire(d))
		return true
	})
	if err != nil {
		return nil, err
	}
	if more {
		resp.NextPageToken = last
	}
	if n := fit(resp.DeadLetters, s.listBudget); n < len(resp.DeadLetters) {
		resp.DeadLetters, resp.NextPageToken = resp.DeadLetters[:n], resp.DeadLetters[n-1].Id
	}
	return resp, nil
}

// BulkDeadLetters replays or deletes the dead letters matching a filter,
// up to limit per call.
func (s *Service) BulkDeadLetters(ctx context.Context, p auth.Principal, req *boomerangv1.BulkDeadLettersRequest) (*boomerangv1.BulkDeadLettersResponse, error) {
	client, err := owner(p, req.Client, true)
	if err != nil {
		return nil, err
	}
	q := deadLetterQuery{client: client, group: req.Group, failedBefore: req.FailedBeforeMs,
		errorContains: req.ErrorContains, payload: req.PayloadContains}
	limit, err := pageSize(req.Limit)
	if err == nil {
		err = q.check()
	}
	if err == nil && req.Action != boomerangv1.BulkAction_BULK_ACTION_REPLAY && req.Action != boomerangv1.BulkAction_BULK_ACTION_DELETE {
		err = invalid("action", "must be REPLAY or DELETE")
	}
	if err != nil {
		return nil, err
	}
	if !req.DryRun {
		if err := writable(p); err != nil {
			return nil, err
		}
	}
	resp := &boomerangv1.BulkDeadLettersResponse{}
	last, more, err := s.scanDeadLetters(ctx, p, q, req.AfterId, func(d *storepb.DeadLetter) bool {
		switch {
		case req.DryRun:
			resp.Matched++
			return true
		case resp.Matched == uint64(limit) || ctx.Err() != nil:
			return false
		}
		resp.Matched++
		if err := s.bulkAct(ctx, p, req.Action, d); err != nil {
			resp.Skipped++
			resp.LastError = ErrorOf(err).Message
		} else {
			resp.Done++
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	resp.LastId, resp.More = last, more
	return resp, nil
}

func (s *Service) bulkAct(ctx context.Context, p auth.Principal, action boomerangv1.BulkAction, d *storepb.DeadLetter) error {
	id := store.DeadLetterID(d)
	if action == boomerangv1.BulkAction_BULK_ACTION_REPLAY {
		_, err := s.sched.Replay(ctx, caller(p), id)
		return about(err, "dead letter %d", id)
	}
	if d.BlocksGroup {
		return errors.New("a group's blocked head: skip or unblock its group instead")
	}
	return about(s.sched.DeleteDeadLetter(ctx, caller(p), id), "dead letter %d", id)
}

// ListGroups lists groups, blocked ones first with the dead letter
// holding each; in a cluster, read from every shard's leader
// (fanout.go).
func (s *Service) ListGroups(ctx context.Context, p auth.Principal, req *boomerangv1.ListGroupsRequest) (*boomerangv1.ListGroupsResponse, error) {
	f := forwarderOf(ctx)
	if f == nil {
		return s.listGroupsHere(ctx, p, req)
	}
	limit := defaultGroupLimit
	if req.Limit != 0 {
		var err error
		if limit, err = pageSize(req.Limit); err != nil {
			return nil, invalid("limit", "must be at most %d, got %d", MaxPageSize, req.Limit)
		}
	}
	return s.listGroupsEverywhere(ctx, f, p, req, limit)
}

// listGroupsHere is ListGroups from the shards this node hosts.
func (s *Service) listGroupsHere(ctx context.Context, p auth.Principal, req *boomerangv1.ListGroupsRequest) (*boomerangv1.ListGroupsResponse, error) {
	client, err := owner(p, req.Client, true)
	if err == nil {
		err = checkName("group_contains", req.GroupContains, scheduler.MaxGroupLen)
	}
	if err != nil {
		return nil, err
	}
	limit := defaultGroupLimit
	if req.Limit != 0 {
		if limit, err = pageSize(req.Limit); err != nil {
			return nil, invalid("limit", "must be at most %d, got %d", MaxPageSize, req.Limit)
		}
	}
	groups, truncated, err := s.sched.Groups(ctx, caller(p), scheduler.GroupQuery{
		Client: client, BlockedOnly: req.BlockedOnly, GroupContains: req.GroupContains, Limit: limit,
	})
	if err != nil {
		return nil, err
	}
	resp := &boomerangv1.ListGroupsResponse{Truncated: truncated}
	for _, g := range groups {
		sum := &boomerangv1.GroupSummary{Group: groupToWire(g)}
		if g.BlockedTask != 0 {
			if d, err := s.sched.DeadLetter(ctx, caller(p), g.BlockedTask); err == nil {
				sum.Blocking = deadLetterToWire(d)
			}
		}
		resp.Groups = append(resp.Groups, sum)
	}
	if n := fit(resp.Groups, s.listBudget); n < len(resp.Groups) {
		resp.Groups, resp.Truncated = resp.Groups[:n], true
	}
	return resp, nil
}

// GetStats returns the counters' history (admin only).
func (s *Service) GetStats(_ context.Context, p auth.Principal, req *boomerangv1.GetStatsRequest) (*boomerangv1.GetStatsResponse, error) {
	if !p.SeesAll() {
		return nil, ErrAdminOnly
	}
	since := s.clock.Now().Add(-defaultStatsHistory)
	if req.SinceMs != 0 {
		since = time.UnixMilli(req.SinceMs)
	}
	resp := &boomerangv1.GetStatsResponse{IntervalMs: s.panel.samp.interval.Milliseconds()}
	for _, x := range s.panel.samp.since(since, defaultStatsPoints) {
		resp.Samples = append(resp.Samples, sampleToWire(x))
	}
	return resp, nil
}

// GetDueHistogram counts upcoming runs per shard and time bucket (admin
// only).
func (s *Service) GetDueHistogram(ctx context.Context, p auth.Principal, req *boomerangv1.GetDueHistogramRequest) (*boomerangv1.GetDueHistogramResponse, error) {
	if !p.SeesAll() {
		return nil, ErrAdminOnly
	}
	from, bucket, buckets := s.clock.Now(), defaultBucket, defaultBuckets
	switch {
	case req.FromMs < 0:
		return nil, invalid("from_ms", "must not be negative, got %d", req.FromMs)
	case req.BucketMs < 0:
		return nil, invalid("bucket_ms", "must not be negative, got %d", req.BucketMs)
	case req.Buckets > maxBuckets:
		return nil, invalid("buckets", "must be at most %d, got %d", maxBuckets, req.Buckets)
	}
	if req.FromMs != 0 {
		from = time.UnixMilli(req.FromMs)
	}
	if req.BucketMs != 0 {
		bucket = time.Duration(req.BucketMs) * time.Millisecond
	}
	if req.Buckets != 0 {
		buckets = int(req.Buckets)
	}
	h, err := s.sched.DueCounts(ctx, caller(p), from, bucket, buckets, maxDueScan)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.GetDueHistogramResponse{
		FromMs: h.From.UnixMilli(), BucketMs: h.Bucket.Milliseconds(), Buckets: uint32(h.Buckets),
		Shards: uint32(s.sched.Shards()), Counts: h.Counts, Overdue: h.Overdue, Truncated: h.Truncated,
	}, nil
}

// GetTaskAttempts returns the attempts the server remembers of a task.
func (s *Service) GetTaskAttempts(_ context.Context, p auth.Principal, req *boomerangv1.GetTaskAttemptsRequest) (*boomerangv1.GetTaskAttemptsResponse, error) {
	if err := checkID("id", req.Id); err != nil {
		return nil, err
	}
	client, attempts := s.panel.hist.attempts(req.Id)
	if !p.SeesAll() && client != p.Client {
		return &boomerangv1.GetTaskAttemptsResponse{}, nil // another client's, or none
	}
	return &boomerangv1.GetTaskAttemptsResponse{Attempts: attemptsToWire(attempts)}, nil
}

// ListCompleted lists finished occurrences, newest first.
func (s *Service) ListCompleted(_ context.Context, p auth.Principal, req *boomerangv1.ListCompletedRequest) (*boomerangv1.ListCompletedResponse, error) {
	client, err := owner(p, req.Client, true)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(req.PageSize)
	if err != nil {
		return nil, err
	}
	done, next := s.panel.hist.completed(req.PageToken, limit, func(f *finished) bool {
		switch {
		case client != "" && f.task.Client != client,
			req.Group != "" && f.task.Group != req.Group,
			req.TaskId != 0 && f.task.Id != req.TaskId,
			req.FailedOnly && f.delivered:
			return false
		}
		return true
	})
	resp := &boomerangv1.ListCompletedResponse{NextPageToken: next}
	for _, f := range done {
		resp.Tasks = append(resp.Tasks, &boomerangv1.CompletedTask{
			Task: taskToWire(scheduler.TaskView{Task: f.task, Status: scheduler.StatusFinished}), Delivered: f.delivered,
			DeadLetterId: f.deadLetter, Error: f.err, FinishedMs: f.at.UnixMilli(), Attempts: attemptsToWire(f.attempts), Seq: f.seq,
		})
	}
	if n := fit(resp.Tasks, s.listBudget); n < len(resp.Tasks) {
		resp.Tasks, resp.NextPageToken = resp.Tasks[:n], resp.Tasks[n-1].Seq
	}
	return resp, nil
}

// ListAuditLog lists operator actions, newest first: all of them for an
// admin, a client's own actions and those on its data otherwise.
func (s *Service) ListAuditLog(_ context.Context, p auth.Principal, req *boomerangv1.ListAuditLogRequest) (*boomerangv1.ListAuditLogResponse, error) {
	limit, err := pageSize(req.Limit)
	if err != nil {
		return nil, invalid("limit", "must be at most %d, got %d", MaxPageSize, req.Limit)
	}
	entries := s.panel.audit.list(req.BeforeId, limit, func(e *boomerangv1.AuditEntry) bool {
		return p.SeesAll() || e.Actor == p.Client || e.Client == p.Client
	})
	return &boomerangv1.ListAuditLogResponse{Entries: entries}, nil
}

// GetCluster describes the nodes and shards (admin only).
func (s *Service) GetCluster(_ context.Context, p auth.Principal, _ *boomerangv1.GetClusterRequest) (*boomerangv1.GetClusterResponse, error) {
	if !p.SeesAll() {
		return nil, ErrAdminOnly
	}
	return s.panel.cluster(), nil
}

// ListPools returns the dispatch pools and their saturation (admin only).
func (s *Service) ListPools(_ context.Context, p auth.Principal, _ *boomerangv1.ListPoolsRequest) (*boomerangv1.ListPoolsResponse, error) {
	if !p.SeesAll() {
		return nil, ErrAdminOnly
	}
	return &boomerangv1.ListPoolsResponse{Pools: s.panel.pools()}, nil
}

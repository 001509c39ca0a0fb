package client

import (
	"context"
	"iter"
	"time"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// ScheduleOption sets a field of the registration Schedule sends.
type ScheduleOption func(*boomerangv1.RegisterTaskRequest)

// After makes the task due d from now.
func After(d time.Duration) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) {
		r.When = &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: d.Milliseconds()}
	}
}

// At makes the task due at t.
func At(t time.Time) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) {
		r.When = &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: t.UnixMilli()}
	}
}

// Every repeats the task every d after its previous due time.
func Every(d time.Duration) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.RepeatIntervalMs = d.Milliseconds() }
}

// Cron repeats the task on a calendar schedule instead of an interval:
// expr has five fields (minute hour day-of-month month day-of-week) or six
// with seconds first, and is read in the IANA time zone timeZone ("" =
// UTC). The first occurrence is the first at or after the due time (now
// unless After or At says otherwise).
func Cron(expr, timeZone string) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.Cron, r.TimeZone = expr, timeZone }
}

// Replacing gives the task a replace key: a registration with the key
// replaces the payload and due time of the client's waiting task with it
// in the same group (or among its ungrouped tasks), keeping its id and
// place, instead of adding a task; once an attempt of that task has
// started, a new one is added. RegisterTask's response says which
// happened (replaced). Not with WithIdempotencyKey or a repeat.
func Replacing(key string) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.ReplaceKey = key }
}

// Debounce, with Replacing, makes the task due d after the latest
// registration with its key instead of After or At, and no later than
// maxWait (0: no limit) after the registration that created it.
func Debounce(d, maxWait time.Duration) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) {
		r.DebounceMs, r.MaxWaitMs = d.Milliseconds(), maxWait.Milliseconds()
	}
}

// InGroup puts the task in a group: a group's tasks are delivered one at a
// time, in due order.
func InGroup(group string) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.Group = group }
}

// WithIdempotencyKey makes a repeated registration with the same key
// return the existing task instead of creating another, so a registration
// whose answer was lost can be retried safely.
func WithIdempotencyKey(key string) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.IdempotencyKey = key }
}

// WithMode sets the task's dispatch mode.
func WithMode(m boomerangv1.DispatchMode) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.Mode = m }
}

// WithCallback overrides the client's callback for this task.
func WithCallback(cb *boomerangv1.Callback) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.Callback = cb }
}

// WithRetry overrides the client's retry policy for this task.
func WithRetry(p *boomerangv1.RetryPolicy) ScheduleOption {
	return func(r *boomerangv1.RegisterTaskRequest) { r.Retry = p }
}

// Schedule registers a task with payload, due now unless After or At says
// otherwise, and returns it once it is durable.
//
// Calls made at the same time from many goroutines are gathered into
// RegisterTasks requests (see WithCoalescing); each still gets its own
// task or error, as if it had gone alone.
func (c *Client) Schedule(ctx context.Context, payload []byte, opts ...ScheduleOption) (*boomerangv1.Task, error) {
	req := registration(payload, opts)
	if c.batcher != nil {
		return c.batcher.schedule(ctx, req)
	}
	return c.scheduleAlone(ctx, req)
}

// scheduleAlone registers one task in a RegisterTask request.
func (c *Client) scheduleAlone(ctx context.Context, req *boomerangv1.RegisterTaskRequest) (*boomerangv1.Task, error) {
	resp, err := c.RegisterTask(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.GetTask(), nil
}

// registration is the request Schedule sends for payload and opts.
func registration(payload []byte, opts []ScheduleOption) *boomerangv1.RegisterTaskRequest {
	req := &boomerangv1.RegisterTaskRequest{Payload: payload}
	for _, opt := range opts {
		opt(req)
	}
	return req
}

// Cancel deletes the task with id.
func (c *Client) Cancel(ctx context.Context, id uint64) error {
	_, err := c.CancelTask(ctx, &boomerangv1.CancelTaskRequest{Id: id})
	return err
}

// Tasks yields every task q selects, page after page, starting at
// q.PageToken (and q.PageDueMs in due order). It stops at the first
// error, which it yields.
func (c *Client) Tasks(ctx context.Context, q *boomerangv1.ListTasksRequest) iter.Seq2[*boomerangv1.Task, error] {
	return func(yield func(*boomerangv1.Task, error) bool) {
		page := &boomerangv1.ListTasksRequest{}
		if q != nil {
			page = proto.CloneOf(q)
		}
		for {
			resp, err := c.ListTasks(ctx, page)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, t := range resp.GetTasks() {
				if !yield(t, nil) {
					return
				}
			}
			if resp.GetNextPageToken() == 0 {
				return
			}
			page.PageToken, page.PageDueMs = resp.GetNextPageToken(), resp.GetNextPageDueMs()
		}
	}
}

// DeadLetters yields every dead letter q selects, page after page. It
// stops at the first error, which it yields.
func (c *Client) DeadLetters(ctx context.Context, q *boomerangv1.ListDeadLettersRequest) iter.Seq2[*boomerangv1.DeadLetter, error] {
	return func(yield func(*boomerangv1.DeadLetter, error) bool) {
		page := &boomerangv1.ListDeadLettersRequest{}
		if q != nil {
			page = proto.CloneOf(q)
		}
		for {
			resp, err := c.ListDeadLetters(ctx, page)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, d := range resp.GetDeadLetters() {
				if !yield(d, nil) {
					return
				}
			}
			if resp.GetNextPageToken() == 0 {
				return
			}
			page.PageToken = resp.GetNextPageToken()
		}
	}
}

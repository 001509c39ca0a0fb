package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

var (
	// ErrNotFound: no such task, dead letter or group for this caller.
	// Another client's tasks are reported as not found.
	ErrNotFound = errors.New("scheduler: not found")
	// ErrInFlight: a delivery attempt of the task is under way.
	ErrInFlight = errors.New("scheduler: task is being delivered")
	// ErrBusy: the partition's request queue is full; retry later.
	ErrBusy = errors.New("scheduler: busy")
	// ErrClosed: the scheduler is stopped or stopping.
	ErrClosed = errors.New("scheduler: closed")
	// ErrNotBlocked: Unblock or Skip on a group that is not blocked.
	ErrNotBlocked = errors.New("scheduler: group is not blocked")
	// ErrGroupFull: the group already holds its client's limit of tasks
	// (Config.GroupLimit); retry once some have been delivered.
	ErrGroupFull = errors.New("scheduler: group is full")
	// ErrNotAttempted marks a Deliverer's error for an attempt that never
	// reached the endpoint because of a local refusal (a full dispatch
	// pool, shutting down): it is tried again after Config.RefusalDelay
	// without counting as an attempt. Wrap it: fmt.Errorf("%w: ...", ErrNotAttempted).
	ErrNotAttempted = errors.New("scheduler: attempt not made")
	// ErrInvalid: a request failed validation; errors.As gives a
	// *FieldError naming the field and the rule.
	ErrInvalid = errors.New("scheduler: invalid request")
)

// FieldError says which field of a request broke which rule.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return fmt.Sprintf("scheduler: invalid %s: %s", e.Field, e.Rule) }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, rule string, args ...any) error {
	return &FieldError{Field: field, Rule: fmt.Sprintf(rule, args...)}
}

// Caller is who asks. A client sees and changes only its own tasks, dead
// letters and groups; an admin sees all of them.
type Caller struct {
	Client string
	Admin  bool
}

func (c Caller) owns(client string) bool { return c.Admin || c.Client == client }

// RegisterRequest schedules a task.
type RegisterRequest struct {
	Client  string // owner; required
	Group   string // "" = ungrouped
	Payload []byte

	// At is the absolute due time. When zero, the task is due Delay from
	// now (zero Delay: now).
	At    time.Time
	Delay time.Duration

	// Interval repeats the task every Interval after its previous due
	// time; 0 means once.
	Interval time.Duration

	// Cron repeats the task on a calendar schedule read in TimeZone (IANA;
	// "" = UTC) instead of an interval; see package cron. The first
	// occurrence is the first at or after the due time above.
	Cron     string
	TimeZone string

	Mode     storepb.DispatchMode // UNSPECIFIED = Config.DefaultMode
	Retry    *storepb.RetryPolicy // nil = the retry decider's default
	Callback *storepb.Callback    // nil = the client's default

	// IdempotencyKey, if set, makes a repeat of this registration by the
	// same client return the task the first one created instead of
	// creating another, for Config.IdempotencyRetention after the first,
	// even once that task has finished (StatusFinished).
	IdempotencyKey string

	// ReplaceKey, if set, replaces the payload and due time of the
	// client's task with this key in the same group (or among its
	// ungrouped tasks) while it waits, keeping its id and place; once an
	// attempt of it has started, a new task is created. One-shot tasks
	// only; not with IdempotencyKey.
	ReplaceKey string
	// Debounce, with ReplaceKey, makes the task due Debounce after the
	// latest registration with the key, and MaxWait (0: no limit) caps
	// that at MaxWait after the registration that created it. It replaces
	// At and Delay.
	Debounce time.Duration
	MaxWait  time.Duration
}

// UpdateRequest changes a task. Nil fields are left as they are.
type UpdateRequest struct {
	ID       uint64
	Payload  []byte // nil = unchanged; an empty non-nil slice empties it
	At       *time.Time
	Interval *time.Duration // replaces any cron schedule

	// Cron, when not nil, replaces the task's repeat with a cron schedule
	// read in TimeZone ("": the task no longer repeats) and starts a new
	// occurrence: the first at or after At, or now.
	Cron     *string
	TimeZone string
}

// Status is where a task is in its lifecycle.
type Status uint8

const (
	// StatusScheduled: waiting for its due time.
	StatusScheduled Status = iota + 1
	// StatusQueued: due, waiting for its group's earlier tasks.
	StatusQueued
	// StatusDelivering: an attempt is under way.
	StatusDelivering
	// StatusRetrying: an attempt failed; the next one is scheduled.
	StatusRetrying
	// StatusFinished: the task no longer exists: it was delivered,
	// dead-lettered or cancelled. Only a registration repeated with the
	// same idempotency key sees it.
	StatusFinished
)

func (s Status) String() string {
	switch s {
	case StatusScheduled:
		return "SCHEDULED"
	case StatusQueued:
		return "QUEUED"
	case StatusDelivering:
		return "DELIVERING"
	case StatusRetrying:
		return "RETRYING"
	case StatusFinished:
		return "FINISHED"
	}
	return "UNKNOWN"
}

// TaskView is a task and its status.
type TaskView struct {
	Task   *storepb.Task
	Status Status
}

// ListQuery selects tasks for List. Zero fields do not filter.
type ListQuery struct {
	Client    string // required unless the caller is an admin
	Group     string
	DueFrom   time.Time // inclusive
	DueTo     time.Time // exclusive
	Recurring *bool
	Retrying  *bool // true: only tasks waiting for a retry
	After     uint64
	Limit     int
}

// Delivery is one attempt to deliver a task occurrence.
type Delivery struct {
	// Task is the task as stored when the attempt started. The Deliverer
	// must not modify it.
	Task *storepb.Task
	// Attempt counts attempts of this occurrence from 1.
	Attempt int
	// Term is the term in which this node leads the task's shard: a
	// fencing token. It only grows from one leader to the next, so a
	// receiver that keeps the highest term it has seen for a group (or,
	// for an ungrouped task, for the task) can drop a late delivery from
	// a leader that was replaced.
	Term uint64
}

// Finished is an occurrence's final outcome, as Config.OnFinished sees it.
type Finished struct {
	// Task is the occurrence as it was last attempted. The receiver must
	// not modify it.
	Task *storepb.Task
	// Delivered is true when the endpoint acknowledged it.
	Delivered bool
	// DeadLetter is the id of the dead letter it became when it failed
	// for good; 0 when Delivered.
	DeadLetter uint64
	// Error is the last attempt's error when it failed for good.
	Error string
}

// Deliverer sends due tasks to their endpoints. Deliver must not block:
// it starts the attempt and calls done exactly once, from any goroutine
// (including before it returns), with nil for an acknowledged delivery or
// the reason it failed.
type Deliverer interface {
	Deliver(d Delivery, done func(error))
}

// DelivererFunc adapts a function to Deliverer.
type DelivererFunc func(d Delivery, done func(error))

// Deliver calls f.
func (f DelivererFunc) Deliver(d Delivery, done func(error)) { f(d, done) }

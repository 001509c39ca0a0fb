package client

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// MaxBatch is the most tasks the server takes in one RegisterTasks
// request.
const MaxBatch = 1000

// envelopeRoom is what a RegisterTasks request needs beyond its tasks:
// the request id, the session id and the framing of the body.
const envelopeRoom = 512

// Task is one task for ScheduleBatch: a payload and the options Schedule
// takes.
type Task struct {
	Payload []byte
	Options []ScheduleOption
}

// NewTask is a Task with payload and opts.
func NewTask(payload []byte, opts ...ScheduleOption) Task {
	return Task{Payload: payload, Options: opts}
}

// ScheduleResult is one task's outcome in ScheduleBatch.
type ScheduleResult struct {
	// Task is the registered task, without its payload (the caller has
	// it), or nil when Err is set.
	Task *boomerangv1.Task
	// Created is false when an idempotency key matched an earlier
	// registration, whose task Task is.
	Created bool
	// Err is why the task was not registered: an *Error the server gave
	// for this task or for its whole request, or a lost connection, the
	// context's error, ErrClosed.
	Err error
}

// ScheduleBatch registers tasks and returns one result per task, in
// order. Each task succeeds or fails on its own, as with Schedule. The
// tasks go in RegisterTasks requests of at most MaxBatch tasks and the
// server's frame limit, one request after another, so the tasks of a
// group keep their order; a task too large for a frame alone fails with
// ErrInvalidRequest without being sent. Every task without an error is
// durable once ScheduleBatch returns.
//
// The error is nil when the server answered every request; otherwise it
// is the first error that failed a whole request, which the results of
// that request's tasks also carry. Once a request has failed, the later
// ones are not sent: their tasks carry the same error. Tasks of earlier
// requests may have been registered.
func (c *Client) ScheduleBatch(ctx context.Context, tasks ...Task) ([]ScheduleResult, error) {
	results := make([]ScheduleResult, len(tasks))
	reqs := make([]*boomerangv1.RegisterTaskRequest, len(tasks))
	for i, t := range tasks {
		reqs[i] = registration(t.Payload, t.Options)
	}
	var failed error
	for _, part := range c.split(reqs, results) {
		if failed == nil {
			failed = c.registerPart(ctx, reqs, part, results)
			continue
		}
		for _, i := range part {
			results[i].Err = failed
		}
	}
	return results, failed
}

// registerPart sends the tasks of reqs at the indexes part in one
// request and fills in their results.
func (c *Client) registerPart(ctx context.Context, reqs []*boomerangv1.RegisterTaskRequest, part []int, results []ScheduleResult) error {
	in := &boomerangv1.RegisterTasksRequest{Tasks: make([]*boomerangv1.RegisterTaskRequest, len(part))}
	for j, i := range part {
		in.Tasks[j] = reqs[i]
	}
	resp, err := c.RegisterTasks(ctx, in)
	if err == nil && len(resp.GetResults()) != len(part) {
		err = fmt.Errorf("%w: %d results for %d tasks", ErrProtocol, len(resp.GetResults()), len(part))
	}
	for j, i := range part {
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i] = resultOf(resp.GetResults()[j])
	}
	return err
}

// resultOf reads one task's result.
func resultOf(r *boomerangv1.RegisterTaskResult) ScheduleResult {
	if e := r.GetError(); e != nil {
		return ScheduleResult{Err: newError(e)}
	}
	reg := r.GetRegistered()
	if reg.GetTask() == nil {
		return ScheduleResult{Err: fmt.Errorf("%w: a task's result has neither a task nor an error", ErrProtocol)}
	}
	return ScheduleResult{Task: reg.GetTask(), Created: reg.GetCreated()}
}

// split cuts reqs into requests of at most MaxBatch tasks and the frame
// limit, as lists of indexes. A task too large for a frame alone gets
// its error in results and is left out.
func (c *Client) split(reqs []*boomerangv1.RegisterTaskRequest, results []ScheduleResult) [][]int {
	limit := c.batchBytes()
	var parts [][]int
	var cur []int
	size := 0
	for i, r := range reqs {
		n := itemSize(r)
		if limit > 0 && n > limit {
			results[i].Err = c.tooLarge(n + envelopeRoom)
			continue
		}
		if len(cur) == MaxBatch || (limit > 0 && size+n > limit) {
			parts, cur, size = append(parts, cur), nil, 0
		}
		cur, size = append(cur, i), size+n
	}
	if len(cur) > 0 {
		parts = append(parts, cur)
	}
	return parts
}

// batchBytes is how many bytes of tasks a RegisterTasks request may
// carry, or 0 while the server's frame limit is unknown.
func (c *Client) batchBytes() int {
	limit := int(c.maxFrame.Load())
	if limit <= envelopeRoom {
		return 0
	}
	return limit - envelopeRoom
}

// itemSize is what a registration takes in a RegisterTasks request.
func itemSize(r *boomerangv1.RegisterTaskRequest) int {
	n := proto.Size(r)
	return protowire.SizeTag(1) + protowire.SizeBytes(n)
}

// tooLarge is the error for a request of size bytes over the frame
// limit, as the server would refuse it.
func (c *Client) tooLarge(size int) *Error {
	return &Error{
		Status:  boomerangv1.Status_STATUS_INVALID_REQUEST,
		Field:   "payload",
		Message: fmt.Sprintf("the request is %d bytes; the server takes frames of at most %d bytes", size, c.maxFrame.Load()),
	}
}

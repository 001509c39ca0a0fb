package server

import (
	"context"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// RegisterTasks registers up to scheduler.MaxRegisterBatch tasks of the
// caller, or of the client an admin names, each on its own: a task that
// RegisterTask would refuse fails alone, with the same error, and the
// others are registered. The request fails as a whole only for what
// concerns all its tasks: the caller's role, the client named, too many
// tasks, or the scheduler stopping. In a cluster, the tasks whose shards
// other nodes lead are forwarded to them (forwardBatch).
func (s *Service) RegisterTasks(ctx context.Context, p auth.Principal, req *boomerangv1.RegisterTasksRequest) (*boomerangv1.RegisterTasksResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	client, err := owner(p, req.Client, false)
	if err != nil {
		return nil, err
	}
	if n := len(req.Tasks); n > scheduler.MaxRegisterBatch {
		return nil, invalid("tasks", "must hold at most %d tasks, got %d; send the rest in further requests", scheduler.MaxRegisterBatch, n)
	}
	o, err := s.registrant(client)
	if err != nil {
		return nil, err
	}
	results := make([]*boomerangv1.RegisterTaskResult, len(req.Tasks))
	batch := make([]scheduler.RegisterRequest, 0, len(req.Tasks))
	index := make([]int, 0, len(req.Tasks)) // batch[j] is task index[j]
	now := s.clock.Now()
	for i, t := range req.Tasks {
		r, err := o.registration(t, now)
		if err != nil {
			results[i] = failedResult(err)
			continue
		}
		batch = append(batch, r)
		index = append(index, i)
	}
	answers, err := s.sched.RegisterBatch(ctx, batch)
	if err != nil {
		return nil, err
	}
	notLed := map[int]uint16{}
	for j, a := range answers {
		if shard, ok := notLeader(a.Err); ok {
			notLed[index[j]] = shard
		}
		if a.Err != nil {
			results[index[j]] = failedResult(a.Err)
			continue
		}
		t := taskToWire(a.View)
		t.Payload = nil // the caller has it; see RegisterTaskResult
		results[index[j]] = &boomerangv1.RegisterTaskResult{Result: &boomerangv1.RegisterTaskResult_Registered{
			Registered: &boomerangv1.RegisterTaskResponse{Task: t, Created: a.Created, Replaced: replaced(batch[j], a.Created)},
		}}
	}
	forwardBatch(ctx, p, req, notLed, results)
	return &boomerangv1.RegisterTasksResponse{Results: results}, nil
}

func failedResult(err error) *boomerangv1.RegisterTaskResult {
	return &boomerangv1.RegisterTaskResult{Result: &boomerangv1.RegisterTaskResult_Error{Error: ErrorOf(err)}}
}

// batchResultOverhead bounds what a result of RegisterTasks adds to the
// fields its registration already carries: the task's id, client, times,
// sequence and status, and the result's framing.
const batchResultOverhead = 128 + auth.MaxClientIDLen

// batchResponseBound is the most a RegisterTasks response takes, for the
// connection's buffer budget: each result repeats its registration less
// the payload, plus batchResultOverhead. (A result whose idempotency key
// matched an earlier task with a longer group or callback may take a
// little more; it is bounded all the same by the scheduler's limits on
// names.)
func batchResponseBound(req *boomerangv1.RegisterTasksRequest, requestSize int) int {
	return requestSize + len(req.GetTasks())*batchResultOverhead + smallResponse
}

package server

import (
	"context"
	"errors"
	"slices"
	"sync"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// A batch's tasks belong to many shards, which other nodes of a cluster
// may lead: the scheduler registers those this node leads and refuses the
// others (scheduler.NotLeaderError, nothing done), which go on to their
// leaders, one sub-batch per leader, all at once, each keeping the
// request's order (a group's tasks share a shard, so their order holds).

// forwardBatch forwards the tasks of req whose shards another node leads
// (notLed: task index to shard) and puts each one's answer in results. A
// sub-batch that cannot be forwarded leaves its tasks' BUSY answers.
func forwardBatch(ctx context.Context, p auth.Principal, req *boomerangv1.RegisterTasksRequest,
	notLed map[int]uint16, results []*boomerangv1.RegisterTaskResult) {
	f := forwarderOf(ctx)
	if f == nil || len(notLed) == 0 {
		return
	}
	byNode := map[uint64][]int{}
	nodes := map[uint64]cluster.NodeInfo{}
	for i, shard := range notLed {
		if leader, ok := f.leader(shard); ok {
			byNode[leader.ID] = append(byNode[leader.ID], i)
			nodes[leader.ID] = leader
		}
	}
	var wg sync.WaitGroup
	for id, tasks := range byNode {
		slices.Sort(tasks)
		sub := &boomerangv1.RegisterTasksRequest{Client: req.Client}
		for _, i := range tasks {
			sub.Tasks = append(sub.Tasks, req.Tasks[i])
		}
		wg.Go(func() {
			resp, err := forwardTo[boomerangv1.RegisterTasksRequest, boomerangv1.RegisterTasksResponse](ctx, f, nodes[id], p, sub)
			for j, i := range tasks {
				switch {
				case err != nil:
					results[i] = failedResult(err)
				case j < len(resp.GetResults()):
					results[i] = resp.Results[j]
				}
			}
		})
	}
	wg.Wait()
}

// notLeader returns the shard err says this node does not lead.
func notLeader(err error) (uint16, bool) {
	var nl *scheduler.NotLeaderError
	if errors.As(err, &nl) {
		return nl.Shard, true
	}
	return 0, false
}

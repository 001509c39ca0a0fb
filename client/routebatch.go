package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/shard"
)

// registerTasks sends a batch's tasks to their shards' leaders: one
// RegisterTasks request per leader, all at once, each keeping the
// batch's order (a group's tasks share a shard), and the results put
// back in the batch's order. Ungrouped tasks without keys go to the
// Client's own node, which places them on shards it leads. A node whose
// shard moved meanwhile forwards what it does not lead. A request
// refused as a whole fails its tasks; a broken connection or an ended
// context fails the call, as for one request.
func (r *router) registerTasks(ctx context.Context, in *boomerangv1.RegisterTasksRequest) (*boomerangv1.RegisterTasksResponse, error) {
	byAddr := r.splitBatch(ctx, in)
	if len(byAddr) <= 1 {
		addr := ""
		for a := range byAddr {
			addr = a
		}
		return r.sendBatch(ctx, in, addr)
	}
	out := &boomerangv1.RegisterTasksResponse{Results: make([]*boomerangv1.RegisterTaskResult, len(in.Tasks))}
	var mu sync.Mutex
	var failed error
	var wg sync.WaitGroup
	for addr, tasks := range byAddr {
		sub := &boomerangv1.RegisterTasksRequest{Client: in.Client, Tasks: make([]*boomerangv1.RegisterTaskRequest, len(tasks))}
		for j, i := range tasks {
			sub.Tasks[j] = in.Tasks[i]
		}
		wg.Go(func() {
			resp, err := r.sendBatch(ctx, sub, addr)
			if err == nil && len(resp.GetResults()) != len(tasks) {
				err = fmt.Errorf("%w: %d results for %d tasks", ErrProtocol, len(resp.GetResults()), len(tasks))
			}
			var refused *Error
			mu.Lock()
			defer mu.Unlock()
			for j, i := range tasks {
				switch {
				case errors.As(err, &refused):
					out.Results[i] = &boomerangv1.RegisterTaskResult{Result: &boomerangv1.RegisterTaskResult_Error{Error: refused.wire()}}
				case err != nil:
					failed = err
				default:
					out.Results[i] = resp.Results[j]
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// splitBatch groups the indexes of in's tasks by the address of their
// leader ("" for the Client's own node), in order.
func (r *router) splitBatch(ctx context.Context, in *boomerangv1.RegisterTasksRequest) map[string][]int {
	v := r.view.Load()
	if v == nil {
		v = r.first(ctx)
	}
	if v == nil || v.standalone {
		return nil
	}
	client := in.Client
	if client == "" {
		client = v.client
	}
	byAddr := map[string][]int{}
	for i, t := range in.Tasks {
		addr := ""
		if s, ok := shard.OfTask(v.shards, client, t.GetGroup(), t.GetIdempotencyKey(), t.GetReplaceKey()); ok {
			addr = v.addr(s)
		}
		byAddr[addr] = append(byAddr[addr], i)
	}
	for _, tasks := range byAddr {
		slices.Sort(tasks)
	}
	return byAddr
}

// sendBatch sends one RegisterTasks request to the node at addr, or
// through the Client's own connection if that node cannot be reached.
func (r *router) sendBatch(ctx context.Context, in *boomerangv1.RegisterTasksRequest, addr string) (*boomerangv1.RegisterTasksResponse, error) {
	req := &boomerangv1.Request{Body: &boomerangv1.Request_RegisterTasks{RegisterTasks: in}}
	resp, err := r.c.doWith(ctx, req, func(ctx context.Context, req *boomerangv1.Request) (*boomerangv1.Response, error) {
		resp, err := r.via(ctx, req, addr)
		if errors.Is(err, errNotSent) {
			r.refreshSoon()
			return r.c.roundTrip(ctx, req)
		}
		return resp, err
	})
	return empty(resp, err, (*boomerangv1.Response).GetRegisterTasks)
}

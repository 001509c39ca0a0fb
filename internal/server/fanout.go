package server

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Listings in a cluster. A node's store holds the shards it hosts, which
// in a cluster of more nodes than replicas are not all of them, and a
// follower's copy may lag its leader's. So a listing (tasks, dead
// letters, groups, searches) is read from every shard's leader: the node asked
// sends the same request, forwarded, to every other node that leads
// shards, answers it itself too, and keeps from each answer the items of
// the shards that node leads (this node reads the shards whose leader it
// does not know). Pages merge in their order (id, or due time then id):
// each answer covers the items up to its next page token when it has
// more, so the merged page ends at the lowest such token, and the next
// page starts after it.

// readers returns the nodes that read the shards, this node included
// (its id: self), and which node reads a shard.
func (f *forwarder) readers(shards int) (nodes map[uint64]cluster.NodeInfo, self uint64, readerOf func(shard uint16) uint64) {
	self = f.member.ID()
	nodes = map[uint64]cluster.NodeInfo{self: {ID: self}}
	of := make(map[uint16]uint64, shards)
	for sh := range uint16(shards) {
		if leader, ok := f.leader(sh); ok {
			nodes[leader.ID] = leader
			of[sh] = leader.ID
		}
	}
	return nodes, self, func(shard uint16) uint64 { return cmp.Or(of[shard], self) }
}

// gather sends in to every node in nodes but self, where local answers,
// all at once, and returns the answers by node, or the first error.
func gather[Req, Resp any](ctx context.Context, f *forwarder, p auth.Principal, in *Req, nodes map[uint64]cluster.NodeInfo,
	self uint64, local func() (*Resp, error)) (map[uint64]*Resp, error) {
	var mu sync.Mutex
	out := make(map[uint64]*Resp, len(nodes))
	var first error
	var wg sync.WaitGroup
	for id, n := range nodes {
		wg.Go(func() {
			var r *Resp
			var err error
			if id == self {
				r, err = local()
			} else {
				r, err = forwardTo[Req, Resp](ctx, f, n, p, in)
			}
			mu.Lock()
			defer mu.Unlock()
			out[id] = r
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return out, first
}

// pageKey is where an item sorts in a listing: by id, or in due order
// by its wake time, then id. A next page token is one too; id 0 means no
// more.
type pageKey struct {
	due int64
	id  uint64
}

func (k pageKey) compare(o pageKey) int {
	return cmp.Or(cmp.Compare(k.due, o.due), cmp.Compare(k.id, o.id))
}

// mergePages merges pages, each node's items kept for the shards it
// reads, into one page of at most limit items in key order, and its next
// page token.
func mergePages[T any](pages map[uint64][]T, nexts map[uint64]pageKey, limit int, readerOf func(uint16) uint64,
	shardOf func(T) uint16, key func(T) pageKey) ([]T, pageKey) {
	end := pageKey{math.MaxInt64, math.MaxUint64}
	cut := end
	for _, next := range nexts {
		if next.id != 0 && next.compare(cut) < 0 {
			cut = next
		}
	}
	var out []T
	for node, items := range pages {
		for _, it := range items {
			if readerOf(shardOf(it)) == node && key(it).compare(cut) <= 0 {
				out = append(out, it)
			}
		}
	}
	slices.SortFunc(out, func(a, b T) int { return key(a).compare(key(b)) })
	switch {
	case len(out) > limit:
		out = out[:limit]
		return out, key(out[limit-1])
	case cut != end:
		return out, cut
	}
	return out, pageKey{}
}

// listTasksEverywhere is ListTasks read from every shard's leader: a
// list or search in id order, or in due order.
func (s *Service) listTasksEverywhere(ctx context.Context, f *forwarder, p auth.Principal, req *boomerangv1.ListTasksRequest, limit int) (*boomerangv1.ListTasksResponse, error) {
	nodes, self, readerOf := f.readers(s.sched.Shards())
	answers, err := gather(ctx, f, p, req, nodes, self, func() (*boomerangv1.ListTasksResponse, error) { return s.listTasksHere(ctx, p, req) })
	if err != nil {
		return nil, err
	}
	byDue := req.Order == boomerangv1.TaskOrder_TASK_ORDER_DUE
	key := func(t *boomerangv1.Task) pageKey { return pageKey{id: t.GetId()} }
	if byDue {
		key = func(t *boomerangv1.Task) pageKey { return pageKey{wireWake(t), t.GetId()} }
	}
	pages, nexts := map[uint64][]*boomerangv1.Task{}, map[uint64]pageKey{}
	for id, a := range answers {
		pages[id], nexts[id] = a.GetTasks(), pageKey{a.GetNextPageDueMs(), a.GetNextPageToken()}
	}
	tasks, next := mergePages(pages, nexts, limit, readerOf, func(t *boomerangv1.Task) uint16 { return store.ShardOf(t.GetId()) }, key)
	if n := fit(tasks, s.listBudget); n < len(tasks) {
		tasks, next = tasks[:n], key(tasks[n-1])
	}
	return &boomerangv1.ListTasksResponse{Tasks: tasks, NextPageToken: next.id, NextPageDueMs: next.due}, nil
}

// wireWake is a listed task's place in due order, store.WakeMs.
func wireWake(t *boomerangv1.Task) int64 {
	return store.WakeMs(&storepb.Task{Group: t.GetGroup(), Mode: storepb.DispatchMode(t.GetMode()), DueMs: t.GetFireAtMs(), NextAttemptMs: t.GetNextAttemptMs()})
}

// listDeadLettersEverywhere is ListDeadLetters in id order read from
// every shard's leader.
func (s *Service) listDeadLettersEverywhere(ctx context.Context, f *forwarder, p auth.Principal, req *boomerangv1.ListDeadLettersRequest, limit int) (*boomerangv1.ListDeadLettersResponse, error) {
	nodes, self, readerOf := f.readers(s.sched.Shards())
	answers, err := gather(ctx, f, p, req, nodes, self, func() (*boomerangv1.ListDeadLettersResponse, error) { return s.listDeadLettersHere(ctx, p, req) })
	if err != nil {
		return nil, err
	}
	pages, nexts := map[uint64][]*boomerangv1.DeadLetter{}, map[uint64]pageKey{}
	for id, a := range answers {
		pages[id], nexts[id] = a.GetDeadLetters(), pageKey{id: a.GetNextPageToken()}
	}
	key := func(d *boomerangv1.DeadLetter) pageKey { return pageKey{id: d.GetId()} }
	dls, next := mergePages(pages, nexts, limit, readerOf, func(d *boomerangv1.DeadLetter) uint16 { return store.ShardOf(d.GetId()) }, key)
	if n := fit(dls, s.listBudget); n < len(dls) {
		dls, next = dls[:n], key(dls[n-1])
	}
	return &boomerangv1.ListDeadLettersResponse{DeadLetters: dls, NextPageToken: next.id}, nil
}

// listGroupsEverywhere is ListGroups read from every shard's leader, in
// the same order: blocked groups first, longest blocked first, then the
// others in shard and name order.
func (s *Service) listGroupsEverywhere(ctx context.Context, f *forwarder, p auth.Principal, req *boomerangv1.ListGroupsRequest, limit int) (*boomerangv1.ListGroupsResponse, error) {
	nodes, self, readerOf := f.readers(s.sched.Shards())
	answers, err := gather(ctx, f, p, req, nodes, self, func() (*boomerangv1.ListGroupsResponse, error) { return s.listGroupsHere(ctx, p, req) })
	if err != nil {
		return nil, err
	}
	shardOf := func(g *boomerangv1.GroupSummary) uint16 {
		return s.groupShard(g.GetGroup().GetClient(), g.GetGroup().GetGroup())
	}
	resp := &boomerangv1.ListGroupsResponse{}
	for id, a := range answers {
		resp.Truncated = resp.Truncated || a.GetTruncated()
		for _, g := range a.GetGroups() {
			if readerOf(shardOf(g)) == id {
				resp.Groups = append(resp.Groups, g)
			}
		}
	}
	slices.SortFunc(resp.Groups, func(a, b *boomerangv1.GroupSummary) int {
		ga, gb := a.GetGroup(), b.GetGroup()
		return cmp.Or(compareBlocked(ga, gb), cmp.Compare(ga.GetBlockedSinceMs(), gb.GetBlockedSinceMs()),
			cmp.Compare(shardOf(a), shardOf(b)), cmp.Compare(ga.GetClient(), gb.GetClient()), cmp.Compare(ga.GetGroup(), gb.GetGroup()))
	})
	if len(resp.Groups) > limit {
		resp.Groups, resp.Truncated = resp.Groups[:limit], true
	}
	if n := fit(resp.Groups, s.listBudget); n < len(resp.Groups) {
		resp.Groups, resp.Truncated = resp.Groups[:n], true
	}
	return resp, nil
}

// compareBlocked orders blocked groups first.
func compareBlocked(a, b *boomerangv1.Group) int {
	switch {
	case a.GetBlocked() == b.GetBlocked():
		return 0
	case a.GetBlocked():
		return -1
	}
	return 1
}

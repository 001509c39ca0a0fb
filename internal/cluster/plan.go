package cluster

import (
	"cmp"
	"slices"

	"github.com/boomerangd/boomerang/internal/store"
)

// planInput is what the controller knows when it plans.
type planInput struct {
	shards int
	// rf is the wanted replication factor; fewer while fewer nodes can
	// hold replicas.
	rf int
	// live are the members without a mark: they may get replicas.
	live map[uint64]NodeInfo
	// keep are the nodes whose replicas stay where they are: the live
	// ones, and those gone for less than the dead timeout.
	keep map[uint64]bool
	// draining are the live members marked draining: they keep serving
	// requests, so they keep a learner of the system group.
	draining map[uint64]bool
}

// plan returns the map that should follow cur. It changes as little as
// it can: it drops replicas on nodes not kept, adds replicas up to the
// replication factor on the least loaded nodes (in zones the shard is not
// in yet), moves replicas from the most to the least loaded live nodes
// until no two differ by more than one, and then balances preferred
// leaders the same way.
func plan(cur *ShardMap, in planInput) *ShardMap {
	next := cur.clone()
	rf := min(in.rf, len(in.keep))
	if rf == 0 {
		return next
	}
	load := make(map[uint64]int)
	for i := range next.Shards {
		p := &next.Shards[i]
		p.Replicas = slices.DeleteFunc(p.Replicas, func(id uint64) bool { return !in.keep[id] })
		for _, id := range p.Replicas {
			load[id]++
		}
	}
	for i := range next.Shards {
		fill(&next.Shards[i], rf, in, load)
	}
	rebalance(cur, next, in, load)
	for i := range next.Shards {
		slices.Sort(next.Shards[i].Replicas)
	}
	balanceLeaders(next, in)
	if len(next.System.Replicas) > 0 {
		placeSystem(&next.System, in, load)
	}
	return next
}

// SystemReplicas is the least replication factor of the system group:
// clients and sessions outlive the loss of any one node even where the
// task shards are given fewer replicas.
const SystemReplicas = 3

// placeSystem places the system group like a shard, with at least
// SystemReplicas voters (all nodes when fewer), outside the balancing
// (it is one group among many), and a learner on every other node kept
// or draining.
func placeSystem(p *Placement, in planInput, load map[uint64]int) {
	p.Replicas = slices.DeleteFunc(p.Replicas, func(id uint64) bool { return !in.keep[id] })
	fill(p, min(max(in.rf, SystemReplicas), len(in.keep)), in, load)
	slices.Sort(p.Replicas)
	if _, ok := in.live[p.Leader]; !ok || !p.Contains(p.Leader) {
		p.Leader, _ = leastLed(p.Replicas, in, map[uint64]int{})
	}
	p.Learners = nil
	for _, nodes := range []map[uint64]bool{in.keep, in.draining} {
		for id := range nodes {
			if !p.holds(id) {
				p.Learners = append(p.Learners, id)
			}
		}
	}
	slices.Sort(p.Learners)
}

// seed is the first map: every shard on one node, as a group of that one
// voter, which the next plans grow. owner names the node a shard starts
// on: the one that already leads it (a standalone data directory turned
// into a cluster's node), else first.
func seed(shards int, first uint64, owner func(shard uint16) (uint64, bool)) *ShardMap {
	m := &ShardMap{Shards: make([]Placement, shards)}
	for i := range m.Shards {
		id, ok := owner(uint16(i))
		if !ok {
			id = first
		}
		m.Shards[i] = Placement{Replicas: []uint64{id}, Leader: id, Initial: []uint64{id}}
	}
	return m
}

// seedSystem places the system group on the node that leads it already
// (a standalone data directory's clients), else on first.
func seedSystem(first uint64, owner func(shard uint16) (uint64, bool)) Placement {
	id, ok := owner(store.SystemShard)
	if !ok {
		id = first
	}
	return Placement{Replicas: []uint64{id}, Leader: id, Initial: []uint64{id}}
}

// fill trims or completes p's replicas to rf.
func fill(p *Placement, rf int, in planInput, load map[uint64]int) {
	for len(p.Replicas) > rf {
		// Drop a gone node's replica first, then the busiest node's.
		drop := slices.MaxFunc(p.Replicas, func(a, b uint64) int {
			_, la := in.live[a]
			_, lb := in.live[b]
			if la != lb {
				if la {
					return -1
				}
				return 1
			}
			return cmp.Or(cmp.Compare(load[a], load[b]), cmp.Compare(a, b))
		})
		p.Replicas = slices.DeleteFunc(p.Replicas, func(id uint64) bool { return id == drop })
		load[drop]--
	}
	for len(p.Replicas) < rf {
		id, ok := leastLoaded(p.Replicas, in, load)
		if !ok {
			return
		}
		p.Replicas = append(p.Replicas, id)
		load[id]++
	}
}

// leastLoaded picks the live node that holds none of replicas, in a zone
// they are not in if there is one, with the fewest replicas.
func leastLoaded(replicas []uint64, in planInput, load map[uint64]int) (uint64, bool) {
	zones := make(map[string]bool)
	for _, id := range replicas {
		zones[in.live[id].Zone] = true
	}
	var best uint64
	found, bestSeen := false, false
	for id, n := range in.live {
		if slices.Contains(replicas, id) {
			continue
		}
		seen := n.Zone != "" && zones[n.Zone]
		better := !found || cmp.Or(compareBool(seen, bestSeen), cmp.Compare(load[id], load[best]), cmp.Compare(id, best)) < 0
		if better {
			best, bestSeen, found = id, seen, true
		}
	}
	return best, found
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// rebalance moves replicas from the busiest live node to the idlest one
// until their loads differ by one at most. A move never takes away the
// last of a shard's replicas in cur: the new ones start empty and wait
// for a leader, which only a replica already placed can become (a
// shard's first replica may not even have started its group yet, and a
// node does not start a group it is no longer placed in). What it
// cannot move now, a later plan moves, once the new replicas are placed.
func rebalance(cur, m *ShardMap, in planInput, load map[uint64]int) {
	if len(in.live) < 2 {
		return
	}
	ids := make([]uint64, 0, len(in.live))
	for id := range in.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	byLoad := func(a, b uint64) int { return cmp.Or(cmp.Compare(load[a], load[b]), cmp.Compare(a, b)) }
	for range len(m.Shards) * len(ids) {
		hi, lo := slices.MaxFunc(ids, byLoad), slices.MinFunc(ids, byLoad)
		if load[hi]-load[lo] <= 1 {
			return
		}
		i := -1
		for j, p := range m.Shards {
			if slices.Contains(p.Replicas, hi) && !slices.Contains(p.Replicas, lo) && slices.ContainsFunc(p.Replicas, func(id uint64) bool {
				return id != hi && slices.Contains(cur.Shards[j].Replicas, id)
			}) {
				i = j
				break
			}
		}
		if i < 0 {
			return
		}
		p := &m.Shards[i]
		p.Replicas[slices.Index(p.Replicas, hi)] = lo
		load[hi]--
		load[lo]++
	}
}

// balanceLeaders gives every shard a live preferred leader among its
// replicas, then moves preferences from the node preferred most to a
// replica preferred less until no shard can narrow the spread.
func balanceLeaders(m *ShardMap, in planInput) {
	count := make(map[uint64]int)
	for i := range m.Shards {
		p := &m.Shards[i]
		if _, ok := in.live[p.Leader]; ok && slices.Contains(p.Replicas, p.Leader) {
			count[p.Leader]++
			continue
		}
		p.Leader = 0
	}
	for i := range m.Shards {
		p := &m.Shards[i]
		if p.Leader == 0 {
			if id, ok := leastLed(p.Replicas, in, count); ok {
				p.Leader = id
				count[id]++
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for i := range m.Shards {
			p := &m.Shards[i]
			id, ok := leastLed(p.Replicas, in, count)
			if ok && count[id]+1 < count[p.Leader] {
				count[p.Leader]--
				p.Leader = id
				count[id]++
				moved = true
			}
		}
	}
}

// leastLed picks the live replica preferred as leader of the fewest
// shards.
func leastLed(replicas []uint64, in planInput, count map[uint64]int) (uint64, bool) {
	var best uint64
	found := false
	for _, id := range replicas {
		if _, ok := in.live[id]; !ok {
			continue
		}
		if !found || cmp.Or(cmp.Compare(count[id], count[best]), cmp.Compare(id, best)) < 0 {
			best, found = id, true
		}
	}
	return best, found
}

package cluster

import (
	"slices"
	"testing"
)

// nodes makes a plan input of live nodes ids, all kept.
func nodes(shards, rf int, ids ...uint64) planInput {
	in := planInput{shards: shards, rf: rf, live: map[uint64]NodeInfo{}, keep: map[uint64]bool{}}
	for _, id := range ids {
		in.live[id] = NodeInfo{ID: id}
		in.keep[id] = true
	}
	return in
}

// checkMap checks what every map must satisfy: rf distinct replicas per
// shard, on kept nodes, a live preferred leader among them, and loads
// and leaders spread within one over the live nodes.
func checkMap(t *testing.T, m *ShardMap, in planInput) {
	t.Helper()
	rf := min(in.rf, len(in.keep))
	load, led := map[uint64]int{}, map[uint64]int{}
	for i, p := range m.Shards {
		if len(p.Replicas) != rf || len(slices.Compact(slices.Clone(p.Replicas))) != rf {
			t.Fatalf("shard %d: replicas %v, want %d distinct", i, p.Replicas, rf)
		}
		for _, id := range p.Replicas {
			if !in.keep[id] {
				t.Fatalf("shard %d: replica on node %d, which is not kept", i, id)
			}
			load[id]++
		}
		if _, ok := in.live[p.Leader]; !ok || !slices.Contains(p.Replicas, p.Leader) {
			t.Fatalf("shard %d: preferred leader %d of replicas %v", i, p.Leader, p.Replicas)
		}
		led[p.Leader]++
	}
	spread := func(what string, c map[uint64]int) {
		lo, hi := len(m.Shards)*rf, 0
		for id := range in.live {
			lo, hi = min(lo, c[id]), max(hi, c[id])
		}
		if hi-lo > 1 {
			t.Fatalf("%s spread over live nodes from %d to %d: %v", what, lo, hi, c)
		}
	}
	spread("replicas", load)
	spread("leaders", led)
	if again := plan(m, in); !again.equal(m) {
		t.Fatalf("planning again changes a settled map")
	}
}

// first seeds a map on node 1, except shards 0 to 3, which node 2
// already leads.
func first(shards int) *ShardMap {
	return seed(shards, 1, func(shard uint16) (uint64, bool) { return 2, shard < 4 })
}

func TestPlanNewCluster(t *testing.T) {
	in := nodes(64, 3, 1, 2, 3)
	m := first(64)
	for i, p := range m.Shards {
		want := uint64(1)
		if i < 4 {
			want = 2
		}
		if !slices.Equal(p.Initial, []uint64{want}) || !slices.Equal(p.Replicas, []uint64{want}) {
			t.Fatalf("shard %d starts on %v with %v, want node %d alone", i, p.Replicas, p.Initial, want)
		}
	}
	checkMap(t, plan(m, in), in)
}

// A node that starts alone holds every shard; as others join, replicas
// reach three and then spread.
func TestPlanGrows(t *testing.T) {
	m := plan(first(16), nodes(16, 3, 1))
	checkMap(t, m, nodes(16, 3, 1))
	for _, ids := range [][]uint64{{1, 2}, {1, 2, 3}, {1, 2, 3, 4}, {1, 2, 3, 4, 5}} {
		in := nodes(16, 3, ids...)
		m = plan(m, in)
		checkMap(t, m, in)
	}
}

// A node gone past the timeout, draining or removed is not kept: its
// replicas go to the others. One gone for less keeps its replicas and
// preferences none.
func TestPlanReplacesNodes(t *testing.T) {
	in := nodes(32, 3, 1, 2, 3, 4)
	m := plan(first(32), in)
	away := nodes(32, 3, 1, 2, 4)
	away.keep[3] = true
	m = plan(m, away)
	held := 0
	for _, p := range m.Shards {
		if slices.Contains(p.Replicas, 3) {
			held++
		}
		if p.Leader == 3 {
			t.Fatalf("an absent node is preferred as leader")
		}
	}
	if held == 0 {
		t.Fatal("a node gone for less than the timeout lost its replicas")
	}
	gone := nodes(32, 3, 1, 2, 4)
	m = plan(m, gone)
	checkMap(t, m, gone)
}

// With zones, each shard's replicas are in different zones.
func TestPlanSpreadsOverZones(t *testing.T) {
	in := nodes(32, 3, 1, 2, 3, 4, 5, 6)
	for id := range in.live {
		in.live[id] = NodeInfo{ID: id, Zone: string(rune('a' + id%3))}
	}
	m := plan(first(32), in)
	for i, p := range m.Shards {
		zones := map[string]bool{}
		for _, id := range p.Replicas {
			zones[in.live[id].Zone] = true
		}
		if len(zones) != 3 {
			t.Fatalf("shard %d: replicas %v in zones %v", i, p.Replicas, zones)
		}
	}
}

// A map grown from one node straight to five keeps, at every step, a
// replica of every shard from the map before: the new replicas start
// empty and need one that may lead. It settles within a few plans.
func TestPlanKeepsAReplica(t *testing.T) {
	in := nodes(64, 3, 1, 2, 3, 4, 5)
	m := first(64)
	for range 4 {
		next := plan(m, in)
		for i, p := range next.Shards {
			if !slices.ContainsFunc(p.Replicas, func(id uint64) bool { return slices.Contains(m.Shards[i].Replicas, id) }) {
				t.Fatalf("shard %d moves from %v to %v: none of its replicas stays", i, m.Shards[i].Replicas, p.Replicas)
			}
		}
		m = next
	}
	checkMap(t, m, in)
}

// The system group gets SystemReplicas voters whatever the replication
// factor (all nodes when fewer), a learner on every other node, and a
// live preferred leader.
func TestPlanSystem(t *testing.T) {
	for _, tc := range []struct {
		rf       int
		ids      []uint64
		voters   int
		learners int
	}{
		{3, []uint64{1}, 1, 0},
		{1, []uint64{1, 2}, 2, 0},
		{1, []uint64{1, 2, 3, 4, 5}, 3, 2},
		{5, []uint64{1, 2, 3, 4, 5, 6}, 5, 1},
	} {
		in := nodes(8, tc.rf, tc.ids...)
		m := first(8)
		m.System = seedSystem(1, func(uint16) (uint64, bool) { return 0, false })
		for range 3 {
			m = plan(m, in)
		}
		s := m.System
		if len(s.Replicas) != tc.voters || len(s.Learners) != tc.learners || !s.Contains(s.Leader) {
			t.Errorf("rf %d, nodes %v: system group %+v, want %d voters and %d learners", tc.rf, tc.ids, s, tc.voters, tc.learners)
		}
		for _, id := range tc.ids {
			if !s.holds(id) {
				t.Errorf("rf %d: node %d holds no replica of the system group", tc.rf, id)
			}
		}
	}
	// A draining node keeps serving requests: its voter becomes a learner.
	in := nodes(8, 3, 1, 2, 3)
	in.draining = map[uint64]bool{4: true}
	m := first(8)
	m.System = Placement{Replicas: []uint64{1, 2, 4}, Leader: 4}
	s := plan(m, in).System
	if !slices.Equal(s.Replicas, []uint64{1, 2, 3}) || !slices.Equal(s.Learners, []uint64{4}) || s.Leader == 4 {
		t.Errorf("draining node 4: system group %+v, want voters 1, 2, 3 and learner 4", s)
	}
}

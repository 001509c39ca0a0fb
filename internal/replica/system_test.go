package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

// With Config.System, every node that hosts the system group beside its
// shards and feeds its entries to the system state machine, the shards'
// to the other; a follower's proposal for the system group reaches the
// leader and is committed.
func TestSystemGroup(t *testing.T) {
	nw := &localNet{LocalNetwork: NewLocalNetwork(7)}
	defer nw.close()
	systems := map[uint64]*recorder{}
	c := &cluster{t: t}
	for _, id := range []uint64{1, 2, 3} {
		fs := store.NewMemFS()
		var sys *recorder
		r := startReplica(t, id, []uint64{1, 2, 3}, []uint16{0, store.SystemShard}, fs, nw, func(cfg *Config) {
			sys = newRecorder(cfg.Store)
			cfg.System = sys
		})
		sys.mu.Lock()
		sys.node = r.node
		sys.mu.Unlock()
		systems[id] = sys
		c.rs = append(c.rs, r)
	}
	defer c.stop()
	if err := c.leader(0).node.Propose(0, []byte("task")); err != nil {
		t.Fatal(err)
	}

	leader := awaitSystemLeader(t, systems)
	follower := uint64(1 + leader%3)
	if err := c.rs[follower-1].node.Propose(store.SystemShard, []byte("from a follower")); err != nil {
		t.Fatal(err)
	}
	for id, sys := range systems {
		sys.await(t, "the follower's proposal", func() bool {
			return slices.Contains(sys.applied[store.SystemShard], "from a follower")
		})
		c.rs[id-1].rec.await(t, "shard 0's entry", func() bool { return len(c.rs[id-1].rec.applied[0]) == 1 })
		if got := c.rs[id-1].rec.entries(store.SystemShard); len(got) > 0 {
			t.Errorf("node %d gave system entries to the shards' state machine: %q", id, got)
		}
		if got := sys.entries(0); len(got) > 0 {
			t.Errorf("node %d gave shard 0's entries to the system state machine: %q", id, got)
		}
	}
}

// awaitSystemLeader returns the node whose system state machine was told
// it leads.
func awaitSystemLeader(t *testing.T, systems map[uint64]*recorder) uint64 {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		for id, sys := range systems {
			sys.mu.Lock()
			leads := sys.lead[store.SystemShard] > 0
			sys.mu.Unlock()
			if leads {
				return id
			}
		}
		time.Sleep(5 * time.Millisecond) // polling the recorders' reports
	}
	t.Fatal("no leader of the system group")
	return 0
}

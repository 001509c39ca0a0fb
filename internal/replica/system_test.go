package replica

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
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
	// A follower forwards a proposal to the leader it knows, and raft
	// drops one made before it heard of any.
	waitFor(t, "the follower to know the system group's leader", func() bool {
		st, err := c.rs[follower-1].node.Status(context.Background())
		i := slices.IndexFunc(st, func(s ShardStatus) bool { return s.Shard == store.SystemShard })
		return err == nil && i >= 0 && st[i].Leader == leader
	})
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

	// A read barrier returns once the node applied what the leader
	// committed before, here on a follower cut off from the leader's
	// messages until the barrier was asked.
	nw.Cut(leader, follower, true)
	if err := c.rs[leader-1].node.Propose(store.SystemShard, []byte("before the barrier")); err != nil {
		t.Fatal(err)
	}
	systems[leader].await(t, "the leader's entry", func() bool {
		return slices.Contains(systems[leader].applied[store.SystemShard], "before the barrier")
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	passed := make(chan bool, 1)
	go func() {
		err := c.rs[follower-1].node.ReadBarrier(ctx, store.SystemShard)
		passed <- err == nil && slices.Contains(systems[follower].entries(store.SystemShard), "before the barrier")
	}()
	nw.Cut(leader, follower, false)
	if !<-passed {
		t.Error("the follower passed a read barrier without the entry committed before it")
	}
	if err := c.rs[0].node.ReadBarrier(ctx, 7); !errors.Is(err, ErrUnknownShard) {
		t.Errorf("a read barrier on a shard not hosted: %v, want ErrUnknownShard", err)
	}
}

// awaitSystemLeader returns the node whose system state machine was told
// it leads.
func awaitSystemLeader(t *testing.T, systems map[uint64]*recorder) uint64 {
	t.Helper()
	var leader uint64
	testwait.For(t, waitLimit, "a leader of the system group", func() bool {
		for id, sys := range systems {
			sys.mu.Lock()
			leads := sys.lead[store.SystemShard] > 0
			sys.mu.Unlock()
			if leads {
				leader = id
				return true
			}
		}
		return false
	})
	return leader
}

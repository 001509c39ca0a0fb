package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

// However often the leader is cut off, no two replicas ever hold a
// shard's lease at once, and the new leader holds it once elected.
func TestLeasesNeverOverlap(t *testing.T) {
	nw := &localNet{LocalNetwork: NewLocalNetwork(2)}
	defer nw.close()
	c := startCluster(t, nw, shards[:2])
	defer c.stop()
	rs := c.rs
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var overlap []string
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, sh := range shards[:2] {
				// A sample counts only if taken within half a tick: the
				// leases of two leaders are a tick apart at least, so a
				// sample this short never catches both but by overlap.
				begin := time.Now()
				var holders []uint64
				for _, r := range rs {
					if r.node.Leased(sh) {
						holders = append(holders, r.id)
					}
				}
				instant := time.Since(begin) < rs[0].node.cfg.Tick/2
				if instant && len(holders) > 1 && len(overlap) < 10 {
					overlap = append(overlap, begin.Format("15:04:05.000000"))
				}
			}
		}
	})
	for round := range 4 {
		c.commit("round", 5)
		old := awaitHolder(c, 0, nil)
		if old == nil {
			t.Fatalf("round %d: no replica holds the lease", round)
		}
		nw.isolate(old.id, true)
		if awaitHolder(c, 0, old) == nil {
			t.Fatalf("round %d: no new leader holds the lease", round)
		}
		if old.node.Leased(0) {
			t.Fatalf("round %d: the cut-off leader still holds the lease", round)
		}
		nw.isolate(old.id, false)
	}
	close(stop)
	wg.Wait()
	if len(overlap) > 0 {
		t.Fatalf("two replicas held a lease at once, at %v", overlap)
	}
}

// A sole voter holds its lease for good.
func TestSoleVoterHoldsTheLease(t *testing.T) {
	r := startReplica(t, 1, nil, shards, store.NewMemFS(), nil)
	defer r.stop(t)
	r.rec.await(t, "leadership", func() bool { return len(r.rec.lead) == len(shards) })
	for _, sh := range shards {
		if !r.node.Leased(sh) {
			t.Fatalf("shard %d: no lease", sh)
		}
	}
}

// awaitHolder waits for a replica other than not to hold shard's lease.
func awaitHolder(c *cluster, shard uint16, not *replica) *replica {
	var holder *replica
	testwait.Until(waitLimit, func() bool {
		for _, r := range c.rs {
			if r != not && r.node.Leased(shard) {
				holder = r
				return true
			}
		}
		return false
	})
	return holder
}

// A replica that restarts forgets when it last heard from its leader, and
// a lease rests on its voters refusing any other candidate for an
// election timeout after that. Here the leader keeps its lease through
// one follower, the keeper, while the other, cut off from it, campaigns
// every few ticks; the leader is then cut off too and the keeper
// restarts at once. The candidate must not win before the cut-off
// leader's lease has run out.
func TestRestartedVoterKeepsTheLeaseSafe(t *testing.T) {
	nw := &localNet{LocalNetwork: NewLocalNetwork(3)}
	defer nw.close()
	c := startCluster(t, nw, shards[:1])
	defer func() { c.stop() }()
	restart := func(r *replica, opts ...func(*Config)) *replica {
		r.stop(t)
		up := startReplica(t, r.id, []uint64{1, 2, 3}, shards[:1], r.fs, nw, opts...)
		c.rs[slices.Index(c.rs, r)] = up
		return up
	}
	eager := func(cfg *Config) { cfg.ElectionTicks = 4 }
	for round := range 5 {
		c.commit(fmt.Sprintf("r%d", round), 3)
		old := awaitHolder(c, 0, nil)
		if old == nil {
			t.Fatalf("round %d: no replica holds the lease", round)
		}
		var keeper, candidate *replica
		for _, r := range c.rs {
			switch {
			case r == old:
			case keeper == nil:
				keeper = r
			default:
				candidate = r
			}
		}
		nw.Cut(old.id, candidate.id, true)
		nw.Cut(candidate.id, old.id, true)
		candidate = restart(candidate, eager)
		testwait.For(t, waitLimit, "the cut-off follower to campaign", func() bool {
			st, err := candidate.node.Status(context.Background())
			return err == nil && len(st) == 1 && st[0].Leader == 0 && st[0].Term > 0
		})
		nw.isolate(old.id, true)
		expiry := old.node.LeaseExpiry(0)
		restart(keeper)
		holder := awaitHolder(c, 0, old)
		if holder == nil {
			t.Fatalf("round %d: no new leader holds the lease", round)
		}
		if at := time.Now(); at.Before(expiry) {
			t.Fatalf("round %d: replica %d held the lease at %s, while replica %d held it until %s",
				round, holder.id, at.Format("15:04:05.000"), old.id, expiry.Format("15:04:05.000"))
		}
		nw.isolate(old.id, false)
		nw.Cut(old.id, candidate.id, false)
		nw.Cut(candidate.id, old.id, false)
		restart(candidate) // back to the default timeout, which leases count on
	}
}

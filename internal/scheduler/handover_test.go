package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A node that leads a shard again, after another node led it for a
// while, decides from the group records as they are now, not as it last
// left them: a group's limit still holds, and the count it keeps is
// right.
func TestGroupRecordsAfterLeadershipReturns(t *testing.T) {
	const limit = 3
	c := newLocalCluster(t, 3, func(int) Deliverer {
		return DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })
	}, func(cfg *Config) { cfg.GroupLimit = func(string) int { return limit } })
	shard := c.nodes[0].cfg.Store.GroupShard("acme", "g")
	first := c.leader(shard)
	register := func(want error) {
		t.Helper()
		req := RegisterRequest{Client: "acme", Group: "g", Payload: payload("p"), Delay: time.Hour}
		if _, err := c.register(context.Background(), req, 0); !errors.Is(err, want) {
			t.Fatalf("register on node %d: %v, want %v", c.leader(shard)+1, err, want)
		}
	}
	moveTo := func(to int) {
		t.Helper()
		from := c.leader(shard)
		if err := c.nodes[from].Node().TransferLeadership(context.Background(), shard, uint64(to+1)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, "the new leader's lease", func() bool { return c.leader(shard) == to })
	}

	register(nil) // the first leader holds the group's record: one task
	other := (first + 1) % 3
	moveTo(other)
	register(nil)
	register(nil) // the group is full
	moveTo(first)
	register(ErrGroupFull)

	// Followers apply a little later: every replica comes to the count.
	waitUntil(t, 30*time.Second, "every replica's record to count the group's tasks", func() bool {
		for _, s := range c.nodes {
			rec, err := s.cfg.Store.Group(shard, "acme", "g")
			if err != nil || rec.Tasks != limit {
				return false
			}
		}
		return true
	})
}

package scheduler

import (
	"context"
	"testing"
	"time"
)

// An attempt decided while its leader's lease had lapsed waits for the
// lease, and counts for its group's rate limit from when it is handed to
// the deliverer, not from when it was decided: otherwise a receiver could
// see more attempts of the group in a window than the limit allows.
//
// The leader stops hearing from its followers (they still hear from it,
// so none of them campaigns) until its lease lapses, three ticks before
// it would step down; the task falls due on the scheduler's fake clock,
// which then moves on while the attempt waits; once the followers are
// heard again the lease returns and the attempt is sent.
func TestHeldAttemptStartsWhenSent(t *testing.T) {
	clock := newFakeClock()
	attempts := make(chan *attempt, 16)
	c := newLocalCluster(t, 3, func(int) Deliverer {
		return DelivererFunc(func(d Delivery, done func(error)) {
			attempts <- &attempt{Delivery: d, done: done}
		})
	}, func(cfg *Config) {
		cfg.Clock = clock
		cfg.RaftTick = 300 * time.Millisecond // three ticks between the lease's end and a step-down
		cfg.GroupRate = func(_, group string) RateLimit { return RateLimit{Max: 1, Per: time.Minute} }
	})
	shard := c.nodes[0].cfg.Store.GroupShard("acme", "g")
	l := c.leader(shard)
	leader := c.nodes[l]
	req := RegisterRequest{Client: "acme", Group: "g", Payload: payload("held"), Delay: time.Second}
	if _, err := c.register(context.Background(), req, l); err != nil {
		t.Fatal(err)
	}

	for i := range c.nodes {
		if i != l {
			c.nw.Cut(uint64(i+1), uint64(l+1), true)
		}
	}
	waitUntil(t, 30*time.Second, "the leader's lease to lapse", func() bool { return !leader.Node().Leased(shard) })
	clock.Advance(time.Second) // due: decided, and held
	decided := clock.Now()
	waitUntil(t, 30*time.Second, "the attempt to be decided", func() bool { return leader.deliveries.Load() == 1 })
	if leader.leadingTerm(t, shard) == 0 {
		t.Fatal("the leader stepped down before the test could restore its followers (ticks too short for this machine)")
	}
	if n := leader.counters.attempts.Load(); n != 0 {
		t.Fatalf("%d attempts sent without the lease", n)
	}
	clock.Advance(5 * time.Second)
	sent := clock.Now()
	for i := range c.nodes {
		c.nw.Cut(uint64(i+1), uint64(l+1), false)
	}

	var a *attempt
	select {
	case a = <-attempts:
	case <-time.After(30 * time.Second):
		t.Fatal("the held attempt was never sent")
	}
	if a.Term != leader.leadingTerm(t, shard) {
		t.Fatalf("sent in term %d by another leader", a.Term)
	}
	a.done(nil)
	waitUntil(t, 30*time.Second, "the attempt's outcome on the leader", func() bool {
		rec, err := leader.cfg.Store.Group(shard, "acme", "g")
		return err == nil && len(rec.RecentStartsMs) == 1
	})
	rec, err := leader.cfg.Store.Group(shard, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.RecentStartsMs[0]; got != sent.UnixMilli() {
		t.Fatalf("the attempt counts as started at %d, want %d, when it was sent (decided at %d)",
			got, sent.UnixMilli(), decided.UnixMilli())
	}
}

// leadingTerm returns the term in which s's partition leads shard, or 0.
func (s *Scheduler) leadingTerm(t *testing.T, shard uint16) uint64 {
	t.Helper()
	p := s.partitionOf(shard)
	var term uint64
	if _, err := s.call(context.Background(), p, func(done func(result)) {
		term = p.leading[shard]
		done(result{})
	}); err != nil {
		t.Fatal(err)
	}
	return term
}

package delivery

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// manualTransport hands every attempt to the test, which ends it.
type manualTransport struct {
	sent chan *attempt
}

func (m *manualTransport) send(a *attempt)  { m.sent <- a }
func (m *manualTransport) contextual() bool { return false }
func (m *manualTransport) sweep(time.Time)  {}
func (m *manualTransport) close()           {}
func newManualTransport() *manualTransport  { return &manualTransport{sent: make(chan *attempt, 1<<16)} }
func (m *manualTransport) pending() int     { return len(m.sent) }
func (m *manualTransport) take(t *testing.T) *attempt {
	t.Helper()
	select {
	case a := <-m.sent:
		return a
	case <-time.After(waitLimit):
		t.Fatal("no attempt started")
		return nil
	}
}

// manualEngine routes TCP callbacks to a manual transport.
func manualEngine(t *testing.T, tune func(*Config)) (*Engine, *manualTransport) {
	t.Helper()
	e, _ := newEngine(t, tcpCallback("a.example:1"), tune)
	m := newManualTransport()
	e.byProto[storepb.Protocol_PROTOCOL_TCP] = m
	// The first delivery of a client loads it off the caller's goroutine;
	// after it, deliveries start before Deliver returns.
	o := deliver(e, task("prime"), 1)
	m.take(t).finish(nil)
	if err := o.wait(t); err != nil {
		t.Fatal(err)
	}
	return e, m
}

func taskTo(endpoint string) *storepb.Task {
	tk := task("x")
	tk.Callback = &storepb.Callback{Endpoint: endpoint}
	return tk
}

func TestPoolBoundsConcurrencyAndQueue(t *testing.T) {
	e, m := manualEngine(t, func(c *Config) {
		c.Pools = map[string]PoolConfig{DefaultPool: {MaxConcurrent: 4, MaxQueued: 6}}
	})
	var outs []outcome
	for range 10 {
		outs = append(outs, deliver(e, task("x"), 1))
	}
	if m.pending() != 4 {
		t.Fatalf("%d attempts started, want the pool's 4", m.pending())
	}
	if s := e.Stats().Pools[DefaultPool]; s.InUse != 4 || s.Queued != 6 {
		t.Fatalf("stats %+v, want 4 in use and 6 queued", s)
	}
	// Beyond the queue bound: refused at once, retried later without
	// counting against the task's attempts.
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrPoolFull) {
		t.Fatalf("outcome %v, want ErrPoolFull", err)
	}
	if !errors.Is(err, scheduler.ErrNotAttempted) {
		t.Fatalf("a full pool: %v is not a local refusal", err)
	}
	if s := e.Stats().Pools[DefaultPool]; s.Rejected != 1 {
		t.Fatalf("rejected %d, want 1", s.Rejected)
	}
	// Each end lets one waiting attempt start, in order.
	for i := range 10 {
		a := m.take(t)
		a.finish(nil)
		if err := outs[i].wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if s := e.Stats().Pools[DefaultPool]; s.InUse != 0 || s.Queued != 0 || s.Lanes != 0 {
		t.Fatalf("stats %+v after everything ended", s)
	}
}

func TestPoolSlowEndpointKeepsItsShare(t *testing.T) {
	e, m := manualEngine(t, func(c *Config) {
		c.Pools = map[string]PoolConfig{DefaultPool: {MaxConcurrent: 8}}
	})
	// A slow endpoint alone takes the whole pool and queues more.
	for range 100 {
		deliver(e, taskTo("slow.example:1"), 1)
	}
	var slow []*attempt
	for range 8 {
		slow = append(slow, m.take(t))
	}
	// A fast endpoint arrives. Slots free up as the slow attempts end
	// (time out); with two endpoints waiting, each gets half the pool, so
	// the fast one is not stuck behind the slow one's backlog.
	for range 100 {
		deliver(e, taskTo("fast.example:1"), 1)
	}
	for _, a := range slow[:4] {
		a.finish(ErrTimeout)
	}
	fast := 0
	for fast < 100 {
		a := m.take(t)
		if a.route.endpoint == "slow.example:1" {
			t.Fatalf("a slow attempt started while the slow endpoint held its share (after %d fast)", fast)
		}
		fast++
		a.finish(nil)
	}
	// With the fast endpoint gone, the slow one may use the whole pool
	// again.
	slow = slow[4:]
	for range 4 {
		slow = append(slow, m.take(t))
	}
	if s := e.Stats().Pools[DefaultPool]; s.InUse != 8 || s.Queued != 88 || s.Lanes != 1 {
		t.Fatalf("stats %+v, want the slow endpoint alone to fill the pool", s)
	}
	for len(slow) > 0 {
		slow[0].finish(nil)
		slow = slow[1:]
		if m.pending() > 0 {
			slow = append(slow, m.take(t))
		}
	}
}

func TestPoolLanesTakeTurns(t *testing.T) {
	e, m := manualEngine(t, func(c *Config) {
		c.Pools = map[string]PoolConfig{DefaultPool: {MaxConcurrent: 1}}
	})
	deliver(e, taskTo("first.example:1"), 1)
	blocker := m.take(t)
	for i := range 3 {
		for _, ep := range []string{"a.example:1", "b.example:1", "c.example:1"} {
			_ = i
			deliver(e, taskTo(ep), 1)
		}
	}
	blocker.finish(nil)
	var order []string
	for range 9 {
		a := m.take(t)
		order = append(order, a.route.endpoint[:1])
		a.finish(nil)
	}
	if got := fmt.Sprint(order); got != "[a b c a b c a b c]" {
		t.Fatalf("start order %s, want lanes taking turns", got)
	}
}

func TestPoolRateLimit(t *testing.T) {
	clock := clockwork.NewFakeClock()
	e, m := manualEngine(t, func(c *Config) {
		c.Clock = clock
		c.Pools = map[string]PoolConfig{"slowly": {MaxConcurrent: 100, MaxPerSecond: 20}}
	})
	var outs []outcome
	for range 10 {
		tk := task("x")
		tk.Callback = &storepb.Callback{Pool: "slowly"}
		outs = append(outs, deliver(e, tk, 1))
	}
	// A burst of a tenth of a second's worth (2), then one every 50 ms.
	for _, a := range []*attempt{m.take(t), m.take(t)} {
		a.finish(nil)
	}
	if m.pending() != 0 {
		t.Fatalf("%d attempts started beyond the burst", m.pending())
	}
	for i := range 8 {
		waitTimers(t, clock, 2) // the rate timer and the janitor
		clock.Advance(49 * time.Millisecond)
		if m.pending() != 0 {
			t.Fatalf("attempt %d started early", i+3)
		}
		clock.Advance(time.Millisecond)
		m.take(t).finish(nil)
	}
	for _, o := range outs {
		if err := o.wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if s := e.Stats().Pools[DefaultPool]; s.InUse != 0 {
		t.Fatalf("the default pool was used: %+v", s)
	}
}

func TestPoolRateLimitWithNothingUnderWay(t *testing.T) {
	clock := clockwork.NewFakeClock()
	e, m := manualEngine(t, func(c *Config) {
		c.Clock = clock
		c.Pools = map[string]PoolConfig{"slowly": {MaxConcurrent: 100, MaxPerSecond: 1}}
	})
	tk := func() *storepb.Task {
		t := task("x")
		t.Callback = &storepb.Callback{Pool: "slowly"}
		return t
	}
	first := deliver(e, tk(), 1)
	m.take(t).finish(nil)
	if err := first.wait(t); err != nil {
		t.Fatal(err)
	}
	// The bucket is empty and nothing is under way: the queued attempt
	// starts when the next token is due, without any other event.
	second := deliver(e, tk(), 1)
	waitTimers(t, clock, 2) // the rate timer and the janitor
	clock.Advance(time.Second)
	m.take(t).finish(nil)
	if err := second.wait(t); err != nil {
		t.Fatal(err)
	}
}

// waitTimers waits until n timers are pending on clock.
func waitTimers(t *testing.T, clock *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("waiting for %d timers: %v", n, err)
	}
}

func TestUnknownPoolUsesDefault(t *testing.T) {
	e, m := manualEngine(t, nil)
	tk := task("x")
	tk.Callback = &storepb.Callback{Pool: "nonesuch"}
	o := deliver(e, tk, 1)
	if s := e.Stats().Pools[DefaultPool]; s.InUse != 1 {
		t.Fatalf("default pool %+v, want the attempt in it", s)
	}
	m.take(t).finish(nil)
	if err := o.wait(t); err != nil {
		t.Fatal(err)
	}
}

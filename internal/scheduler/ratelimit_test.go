package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

func rateOf(limits map[string]RateLimit) func(*Config) {
	return func(c *Config) {
		c.GroupRate = func(_, group string) RateLimit { return limits[group] }
	}
}

// A rate-limited group delivers at most Max attempts per Per, in order,
// and waits however long Per is, beyond the loaded horizon too.
func TestGroupRateLimit(t *testing.T) {
	h := newHarness(t, rateOf(map[string]RateLimit{"g": {Max: 2, Per: time.Hour}}))
	for _, p := range []string{"1", "2", "3", "4"} {
		h.register(RegisterRequest{Payload: payload(p), Group: "g"})
	}
	h.register(RegisterRequest{Payload: payload("free"), Group: "other"})
	h.ack(h.expect("1", 1))
	h.ack(h.expect("free", 1))
	h.advance(time.Minute)
	h.ack(h.expect("2", 1))
	h.advance(58 * time.Minute) // 59 min after the first start
	h.none()
	h.advance(time.Minute) // an hour after the first start
	h.ack(h.expect("3", 1))
	h.advance(time.Minute)
	h.ack(h.expect("4", 1))
	h.none()
}

// Failed attempts count too, and the retry waits for the rate.
func TestGroupRateLimitCountsRetries(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		rateOf(map[string]RateLimit{"g": {Max: 1, Per: 10 * time.Second}})(c)
		c.Retry = FixedRetry{Attempts: 3, Delay: time.Second}
	})
	h.register(RegisterRequest{Payload: payload("flaky"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("next"), Group: "g"})
	h.fail(h.expect("flaky", 1), errRefused)
	h.advance(time.Second) // the retry is due, the rate is not
	h.none()
	h.advance(9 * time.Second)
	h.ack(h.expect("flaky", 2))
	h.advance(9 * time.Second)
	h.none()
	h.advance(time.Second)
	h.ack(h.expect("next", 1))
}

// A group whose tasks are done keeps the starts its limit counts until
// they leave the window, then its record goes.
func TestGroupRateLimitIdleRecord(t *testing.T) {
	h := newHarness(t, rateOf(map[string]RateLimit{"g": {Max: 1, Per: 10 * time.Second}}))
	h.register(RegisterRequest{Payload: payload("only"), Group: "g"})
	h.ack(h.expect("only", 1))
	shard := h.st.GroupShard("acme", "g")
	rec, err := h.st.Group(shard, "acme", "g")
	if err != nil || len(rec.RecentStartsMs) != 1 || rec.Tasks != 0 {
		t.Fatalf("group record after its last task: %v, %v", rec, err)
	}
	// Registered within the window: it waits for the rate.
	h.advance(5 * time.Second)
	h.register(RegisterRequest{Payload: payload("soon"), Group: "g"})
	h.none()
	h.advance(5 * time.Second)
	h.ack(h.expect("soon", 1))
	h.advance(10 * time.Second)
	if _, err := h.st.Group(shard, "acme", "g"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("group record once its starts left the window: %v", err)
	}
}

// The starts a rate limit counts survive a power loss: after it, the
// group's next task still waits for the rate.
func TestGroupRateLimitSurvivesPowerLoss(t *testing.T) {
	h := newPowerHarness(t, rateOf(map[string]RateLimit{"g": {Max: 1, Per: time.Minute}}))
	h.register(RegisterRequest{Payload: payload("first"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("second"), Group: "g"})
	h.ack(h.expect("first", 1))
	h.powerLoss()
	h.settle()
	h.none()
	h.advance(59 * time.Second)
	h.none()
	h.advance(time.Second)
	h.ack(h.expect("second", 1))
}

// BenchmarkGroupDelivery delivers tasks of 64 groups, acknowledged at
// once, with no rate limit (the baseline) and under limits that never
// bind, so the difference is what counting starts costs: reading the
// group's record when its head is due and writing it, with the starts in
// the window, with each outcome. The clock stands still, so every start
// stays in the window: "1000/h" keeps up to b.N/64 starts per group
// (about 150 on average at 20000x), "10/ms" at most 10. One op is one
// task delivered.
func BenchmarkGroupDelivery(b *testing.B) {
	for _, bc := range []struct {
		name string
		rate RateLimit
	}{
		{"no-limit", RateLimit{}},
		{"limit=10/ms", RateLimit{Max: 10, Per: time.Millisecond}},
		{"limit=1000/h", RateLimit{Max: MaxRateLimit, Per: time.Hour}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.rate.Max == 10 {
				benchGroupDelivery(b, bc.rate, true)
				return
			}
			benchGroupDelivery(b, bc.rate, false)
		})
	}
}

func benchGroupDelivery(b *testing.B, rate RateLimit, tick bool) {
	var finished atomic.Int64
	all := make(chan struct{})
	// An in-memory filesystem: syncs cost nothing, so what is left is
	// the scheduler's own work.
	h := &harness{t: b, dir: "/data", fs: store.NewMemFS(), clock: newFakeClock(), del: newRecorder(), tune: func(c *Config) {
		c.GroupRate = func(_, _ string) RateLimit { return rate }
		c.OnFinished = func(Finished) {
			if finished.Add(1) == int64(b.N) {
				close(all)
			}
		}
	}}
	h.open()
	defer h.close()
	h.del.auto = func(Delivery) (error, bool) { return nil, true }
	reqs := make([]RegisterRequest, 0, MaxRegisterBatch)
	flush := func() {
		if _, err := h.s.RegisterBatch(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
		reqs = reqs[:0]
	}
	for i := range b.N {
		reqs = append(reqs, RegisterRequest{Client: "bench", Group: fmt.Sprint("g", i%64), Payload: payload("x"), Delay: time.Hour})
		if len(reqs) == MaxRegisterBatch {
			flush()
		}
	}
	flush()
	b.ResetTimer()
	h.clock.Advance(time.Hour)
	if !tick {
		<-all
		return
	}
	// A limit of 10 per ms binds unless the clock moves on.
	for {
		select {
		case <-all:
			return
		case <-time.After(100 * time.Microsecond):
			h.clock.Advance(time.Millisecond)
		}
	}
}

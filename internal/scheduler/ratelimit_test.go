package scheduler

import (
	"errors"
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

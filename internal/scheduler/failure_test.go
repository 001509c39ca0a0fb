package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
	"github.com/boomerangd/boomerang/internal/testwait"
)

func threeAttempts(c *Config) { c.Retry = FixedRetry{Attempts: 3, Delay: time.Second} }

// A failing attempt is retried after the delay, holding its group; the
// attempt count and error are stored.
func TestFailedAttemptIsRetriedAndHoldsItsGroup(t *testing.T) {
	h := newHarness(t, threeAttempts)
	v := h.register(RegisterRequest{Payload: payload("a"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("b"), Group: "g"})
	h.settle()
	h.fail(h.expect("a", 1), errRefused)
	got, err := h.s.Get(context.Background(), Caller{Client: "acme"}, v.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusRetrying || got.Task.Attempts != 1 || got.Task.LastError != errRefused.Error() ||
		got.Task.NextAttemptMs != epoch.Add(time.Second).UnixMilli() {
		t.Fatalf("after a failure: %v %+v", got.Status, got.Task)
	}
	h.none() // b waits behind the retrying head
	h.advance(time.Second)
	h.ack(h.expect("a", 2))
	h.ack(h.expect("b", 1))
}

func TestExhaustedRetriesDeadLetterAndNextOnErrorMovesOn(t *testing.T) {
	h := newHarness(t, threeAttempts)
	h.register(RegisterRequest{Payload: payload("bad"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("good"), Group: "g"})
	h.settle()
	for i := 1; i <= 3; i++ {
		h.fail(h.expect("bad", i), errRefused)
		h.advance(time.Second)
	}
	h.ack(h.expect("good", 1))
	dls, _, err := h.s.DeadLetters(context.Background(), Caller{Client: "acme"}, "acme", 0, 10)
	if err != nil || len(dls) != 1 {
		t.Fatalf("dead letters %v, %v", dls, err)
	}
	dl := dls[0]
	if string(dl.Task.Payload) != "bad" || dl.Attempts != 3 || dl.LastError != errRefused.Error() || dl.BlocksGroup {
		t.Fatalf("dead letter %+v", dl)
	}
	if st := h.s.Stats(); st.DeadLetters != 1 || st.Failed != 3 || st.Delivered != 1 {
		t.Fatalf("stats after a dead letter: %+v", st)
	}
	h.restart()
	if n := h.s.Stats().DeadLetters; n != 1 {
		t.Fatalf("dead letter gauge after restart %d, want 1", n)
	}
	// Replay joins the back of the group with fresh attempts.
	if _, err := h.s.Replay(context.Background(), Caller{Client: "acme"}, dl.Id); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.ack(h.expect("bad", 1))
	if dls, _, _ := h.s.DeadLetters(context.Background(), Caller{Client: "acme"}, "acme", 0, 10); len(dls) != 0 {
		t.Fatalf("dead letters after replay: %v", dls)
	}
	if n := h.s.Stats().DeadLetters; n != 0 {
		t.Fatalf("dead letter gauge after replay %d, want 0", n)
	}
}

func blockedGroup(t *testing.T, h *harness) {
	t.Helper()
	block := storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
	h.register(RegisterRequest{Payload: payload("bad"), Group: "g", Mode: block, Retry: &storepb.RetryPolicy{MaxAttempts: 1}})
	h.register(RegisterRequest{Payload: payload("next"), Group: "g", Mode: block})
	h.register(RegisterRequest{Payload: payload("other"), Group: "h"})
	h.settle()
	first, second := h.next(), h.next()
	if string(first.Task.Payload) == "other" {
		first, second = second, first
	}
	h.ack(second)
	h.fail(first, errRefused)
	h.none()
	g, err := h.s.Group(context.Background(), Caller{Client: "acme"}, "acme", "g")
	if err != nil || g.BlockedTask == 0 {
		t.Fatalf("group after a BLOCK_ON_ERROR failure: %+v, %v", g, err)
	}
}

func TestBlockOnErrorHaltsGroupUntilUnblock(t *testing.T) {
	h := newHarness(t, nil)
	c := Caller{Client: "acme"}
	blockedGroup(t, h)
	h.advance(time.Hour)
	h.none()
	if err := h.s.Skip(context.Background(), c, "acme", "h"); !errors.Is(err, ErrNotBlocked) {
		t.Fatalf("Skip of an open group: %v", err)
	}
	if _, err := h.s.Unblock(context.Background(), c, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.ack(h.expect("bad", 1)) // the head again, fresh attempts
	h.settle()
	h.ack(h.expect("next", 1))
	if dls, _, _ := h.s.DeadLetters(context.Background(), c, "acme", 0, 10); len(dls) != 0 {
		t.Fatalf("dead letters after unblock: %v", dls)
	}
}

func TestSkipLeavesHeadInDeadLetters(t *testing.T) {
	h := newHarness(t, nil)
	c := Caller{Client: "acme"}
	blockedGroup(t, h)
	if err := h.s.Skip(context.Background(), c, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.ack(h.expect("next", 1))
	dls, _, _ := h.s.DeadLetters(context.Background(), c, "acme", 0, 10)
	if len(dls) != 1 || dls[0].BlocksGroup {
		t.Fatalf("dead letters after skip: %v", dls)
	}
}

// The blocked state is durable: after a restart the group is still halted
// and its later tasks wait, until the head is replayed.
func TestBlockedGroupSurvivesRestart(t *testing.T) {
	h := newHarness(t, nil)
	blockedGroup(t, h)
	h.register(RegisterRequest{Payload: payload("after"), Group: "g", Delay: time.Second})
	h.restart()
	h.advance(time.Minute)
	h.none()
	dls, _, err := h.s.DeadLetters(context.Background(), Caller{Admin: true}, "", 0, 10)
	if err != nil || len(dls) != 1 || !dls[0].BlocksGroup {
		t.Fatalf("dead letters: %v %v", dls, err)
	}
	if _, err := h.s.Replay(context.Background(), Caller{Client: "acme"}, dls[0].Id); err != nil {
		t.Fatal(err)
	}
	h.settle()
	for _, want := range []string{"bad", "next", "after"} {
		h.ack(h.expect(want, 1))
	}
	h.none()
}

// Unblocking right after a restart, before the restored head has reached
// the gate, still runs the head first.
func TestUnblockRacingRecovery(t *testing.T) {
	h := newHarness(t, nil)
	blockedGroup(t, h)
	h.close()
	h.open()
	if _, err := h.s.Unblock(context.Background(), Caller{Client: "acme"}, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.ack(h.expect("bad", 1))
	h.ack(h.expect("next", 1))
}

// A crash during a delivery, or during a retry's backoff: the task is
// delivered again after the restart, a retry at its stored time, and its
// group waits for it.
func TestRecoveryRedeliversAndResumesRetries(t *testing.T) {
	h := newHarness(t, threeAttempts)
	h.register(RegisterRequest{Payload: payload("delivering"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("retrying"), Group: "r"})
	h.register(RegisterRequest{Payload: payload("behind"), Group: "r"})
	h.settle()
	a, b := h.next(), h.next()
	if string(a.Task.Payload) == "retrying" {
		a, b = b, a
	}
	h.fail(b, errRefused) // retry due at 1s
	h.crash()
	h.open()
	h.settle()
	h.ack(h.expect("delivering", 1))
	h.none()
	h.advance(time.Second)
	h.ack(h.expect("retrying", 2))
	h.ack(h.expect("behind", 1))
}

// crash stops the scheduler without letting it finish anything, as a
// kill would, and closes the store.

func TestRecurringFailureDeadLettersTheOccurrenceAndGoesOn(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Retry = FixedRetry{Attempts: 1} })
	v := h.register(RegisterRequest{Payload: payload("every"), Delay: time.Second, Interval: time.Second})
	h.advance(time.Second)
	h.fail(h.expect("every", 1), errRefused)
	h.advance(time.Second)
	h.ack(h.expect("every", 1))
	dls, _, _ := h.s.DeadLetters(context.Background(), Caller{Client: "acme"}, "acme", 0, 10)
	if len(dls) != 1 || dls[0].Task.Id != v.Task.Id || dls[0].Task.DueMs != epoch.Add(time.Second).UnixMilli() {
		t.Fatalf("dead letters %v", dls)
	}
}

// The dead letter sweep keeps each client's queue within its limits,
// oldest first, and never deletes a group's blocked head.
func TestDeadLetterSweepEnforcesClientLimits(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Retry = FixedRetry{Attempts: 1}
		c.SweepInterval = time.Minute
		c.DeadLetterPolicy = func(client string) DeadLetterLimits {
			if client == "acme" {
				return DeadLetterLimits{MaxEntries: 2, Retention: time.Hour}
			}
			return DeadLetterLimits{}
		}
	})
	block := storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
	h.register(RegisterRequest{Payload: payload("head"), Group: "g", Mode: block})
	h.settle()
	h.fail(h.expect("head", 1), errRefused)
	for i := range 4 {
		h.register(RegisterRequest{Payload: payload("x")})
		h.register(RegisterRequest{Client: "globex", Payload: payload("y")})
		h.settle()
		h.fail(h.next(), errRefused)
		h.fail(h.next(), errRefused)
		h.advance(time.Duration(i+1) * time.Second) // distinct failure times
	}
	count := func(client string) (n int, heads int) {
		dls, _, err := h.s.DeadLetters(context.Background(), Caller{Admin: true}, client, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, dl := range dls {
			if dl.BlocksGroup {
				heads++
			}
		}
		return len(dls), heads
	}
	// A sweep of the dead letters beyond a maximum, started before the
	// clock moved, may be the one that ends first: wait for the outcome,
	// not for a count of sweeps.
	h.advance(time.Minute)
	testwait.For(t, waitLimit, "acme down to 2 dead letters plus its blocked head", func() bool {
		n, heads := count("acme")
		return n == 3 && heads == 1
	})
	if n, _ := count("globex"); n != 4 {
		t.Fatalf("globex, without limits, keeps %d, want 4", n)
	}
	h.advance(time.Hour) // past retention
	testwait.For(t, waitLimit, "acme down to its blocked head", func() bool {
		n, heads := count("acme")
		return n == 1 && heads == 1
	})
}

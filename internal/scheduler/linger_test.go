package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// lingerHarness runs one partition (so that a batch's ungrouped tasks
// share a shard) whose outcomes may wait for an hour: only maxHeld of
// them, or a stop, make them be proposed.
func lingerHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) {
		c.Partitions = 1
		c.OutcomeLinger = time.Hour
		c.LogRetention = math.MaxUint32 // keep every entry
	})
}

// The outcomes of ungrouped tasks on one shard wait for each other and
// share a log entry.
func TestOutcomesOfUngroupedTasksShareALogEntry(t *testing.T) {
	h := lingerHarness(t)
	reqs := make([]RegisterRequest, maxHeld)
	for i := range reqs {
		reqs[i] = RegisterRequest{Client: "acme", Payload: payload(fmt.Sprint(i))}
	}
	res, err := h.s.RegisterBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	shard := store.ShardOf(res[0].View.Task.Id)
	for _, r := range res {
		if r.Err != nil || store.ShardOf(r.View.Task.Id) != shard {
			t.Fatalf("registration: %v, shard %d, want every task on shard %d", r.Err, store.ShardOf(r.View.Task.Id), shard)
		}
	}
	for range maxHeld {
		h.next().done(nil)
		h.roundTrip() // each outcome in a loop turn of its own
	}
	h.settle() // the last outcome makes maxHeld: they are proposed
	h.close()

	st, err := store.Open(h.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.RaftLog(shard)
	if err != nil {
		t.Fatal(err)
	}
	var most int
	for _, e := range l.Entries {
		entry, err := decodeEntry(shard, e)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range entry.Commands {
			if c.Op == storepb.Op_OP_OUTCOME {
				n++
			}
		}
		most = max(most, n)
	}
	if most != maxHeld {
		t.Fatalf("at most %d outcomes in one log entry, want %d", most, maxHeld)
	}
}

// An ordered group's outcome is proposed at once: its next task waits
// for it.
func TestOutcomesInAGroupDoNotWait(t *testing.T) {
	h := lingerHarness(t)
	h.register(RegisterRequest{Payload: payload("a"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("b"), Group: "g"})
	h.ack(h.expect("a", 1))
	h.ack(h.expect("b", 1))
}

// Stopping proposes the outcomes held back, so none is delivered again
// after a restart.
func TestStopProposesHeldOutcomes(t *testing.T) {
	h := lingerHarness(t)
	h.register(RegisterRequest{Payload: payload("a")})
	h.next().done(nil)
	h.roundTrip() // the outcome is decided and held
	if got := h.s.Stats().Delivered; got != 1 {
		t.Fatalf("delivered %d, want 1", got)
	}
	h.restart()
	h.settle()
	h.none()
}

// Get shows only what is durable: a task it no longer finds after its
// delivery is gone from the store too, though its outcome waited.
func TestGetWaitsForAHeldOutcome(t *testing.T) {
	h := newHarness(t, nil) // the default linger
	v := h.register(RegisterRequest{Payload: payload("a")})
	h.next().done(nil)
	h.roundTrip() // the outcome is decided and held
	if _, err := h.s.Get(context.Background(), Caller{Client: "acme"}, v.Task.Id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delivery: %v, want ErrNotFound", err)
	}
	if _, err := h.st.Task(v.Task.Id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the store after Get found no task: %v, want ErrNotFound", err)
	}
}

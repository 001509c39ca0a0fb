package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

// The tasks a batch may place anywhere share one shard a partition, so
// one log entry a partition: spread over the shards they would cost a log
// entry and a Raft turn a shard.
func TestBatchPlacesFreeTasksOnAShardAPartition(t *testing.T) {
	h := newHarness(t, nil)
	reqs := make([]RegisterRequest, 50)
	for i := range reqs {
		reqs[i] = RegisterRequest{Client: "acme", Payload: payload("p"), Delay: time.Hour}
	}
	reqs[7].Group = "g" // placed by its group
	res, err := h.s.RegisterBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	shards := make(map[uint16]int)
	parts := make(map[*partition]bool)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("task %d: %v", i, r.Err)
		}
		if i != 7 {
			shard := store.ShardOf(r.View.Task.Id)
			shards[shard]++
			parts[h.s.partitionOf(shard)] = true
		}
	}
	if len(shards) != len(h.s.parts) || len(parts) != len(h.s.parts) {
		t.Errorf("the batch's free tasks went to shards %v, want one in each of %d partitions", shards, len(h.s.parts))
	}
	if got, want := store.ShardOf(res[7].View.Task.Id), h.st.GroupShard("acme", "g"); got != want {
		t.Errorf("grouped task on shard %d, want its group's %d", got, want)
	}
}

// A partition keeps free tasks on one shard from turn to turn until the
// shard has had maxPlaced bytes; the task that does not fit starts the
// next stint on its own candidate.
func TestPlaceKeepsAStintOnOneShard(t *testing.T) {
	h := newHarness(t, nil)
	p := h.s.parts[0]
	a, b, c := p.shards[1], p.shards[2], p.shards[3] // c: a candidate that a stint with room ignores
	turn := func(f func()) {
		t.Helper()
		_, err := h.s.call(context.Background(), p, func(done func(result)) { f(); done(result{}) })
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []uint16
	turn(func() { p.anywhere = -1; got = append(got, p.place(a, 10), p.place(b, 10)) })
	turn(func() { got = append(got, p.place(b, 10)) })
	turn(func() { got = append(got, p.place(c, maxPlaced-3*(10+placedOverhead)-placedOverhead), p.place(b, 1)) })
	if want := []uint16{a, a, a, a, b}; !slices.Equal(got, want) {
		t.Errorf("placed on %v, want %v", got, want)
	}
}

// Free tasks registered one after the other go round the shards, a
// stint each: here a stint holds one task.
func TestFreeTasksSpreadOverShards(t *testing.T) {
	h := newHarness(t, nil)
	n := h.st.Shards()
	shards := make(map[uint16]bool)
	for range n {
		v := h.register(RegisterRequest{Client: "acme", Payload: make([]byte, maxPlaced/2), Delay: time.Hour})
		shards[store.ShardOf(v.Task.Id)] = true
	}
	if len(shards) != n {
		t.Errorf("%d tasks of half a stint registered one by one went to %d shards, want %d", n, len(shards), n)
	}
}

// Large tasks that may go anywhere move on to the next shard once one
// has maxPlaced bytes, in a batch and within a turn.
func TestLargeFreeTasksSpreadByTheirBytes(t *testing.T) {
	h := newHarness(t, nil)
	const size = maxPlaced / 3
	reqs := make([]RegisterRequest, 12)
	for i := range reqs {
		reqs[i] = RegisterRequest{Client: "acme", Payload: make([]byte, size), Delay: time.Hour}
	}
	res, err := h.s.RegisterBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	bytes := make(map[uint16]int)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("task %d: %v", i, r.Err)
		}
		bytes[store.ShardOf(r.View.Task.Id)] += size
	}
	if len(bytes) < 4 { // 12 tasks of a third of maxPlaced each
		t.Errorf("the batch's %d-byte tasks went to shards %v, want at least 4", size, bytes)
	}
	p := h.s.parts[0]
	var got []uint16
	_, err = h.s.call(context.Background(), p, func(done func(result)) {
		p.anywhere = -1 // a stint of its own, not the batch's
		for _, c := range p.shards[:4] {
			got = append(got, p.place(c, size))
		}
		done(result{})
	})
	if err != nil {
		t.Fatal(err)
	}
	// A third of maxPlaced and the overhead: two fit in a stint.
	if want := []uint16{p.shards[0], p.shards[0], p.shards[2], p.shards[2]}; !slices.Equal(got, want) {
		t.Errorf("a turn placed %d-byte tasks on %v, want %v", size, got, want)
	}
}

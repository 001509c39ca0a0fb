package scheduler

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Applying a shard's log is a pure function of the log: replaying every
// shard's log from empty state gives state byte-identical to the
// scheduler's, whatever the workload did (registrations, updates, cancels,
// retries, dead letters, replays, unblocks, recurring and cron tasks, rate-limited groups, idempotency
// keys and their expiry).
func TestReplayingTheLogGivesTheSameState(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.LogRetention = math.MaxUint32 // keep every entry
		c.Retry = FixedRetry{Attempts: 2, Delay: time.Second}
		c.IdempotencyRetention = time.Hour
		c.GroupRate = func(_, group string) RateLimit { // counts group g's starts, never holds them
			if group == "g" {
				return RateLimit{Max: 100, Per: time.Hour}
			}
			return RateLimit{}
		}
	})
	ctx, acme := context.Background(), Caller{Client: "acme"}
	block := storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
	for i := range 20 {
		h.register(RegisterRequest{Payload: payload("a"), Group: "g", IdempotencyKey: string(rune('a' + i))})
	}
	h.register(RegisterRequest{Payload: payload("head"), Group: "b", Mode: block})
	h.register(RegisterRequest{Payload: payload("next"), Group: "b"})
	h.register(RegisterRequest{Payload: payload("every"), Interval: time.Minute, Delay: time.Minute})
	h.register(RegisterRequest{Payload: payload("hourly"), Cron: "0 * * * *", TimeZone: "Europe/Zurich", Delay: time.Minute})
	later := h.register(RegisterRequest{Payload: payload("later"), Delay: time.Hour})
	h.register(RegisterRequest{Payload: payload("untouched"), Delay: 10 * time.Hour})
	h.register(RegisterRequest{Payload: payload("untouched"), Group: "u", Delay: 10 * time.Hour})
	gone := h.register(RegisterRequest{Payload: payload("gone"), Delay: time.Hour})
	at := epoch.Add(2 * time.Hour)
	if _, err := h.s.Update(ctx, acme, UpdateRequest{ID: later.Task.Id, Payload: payload("changed"), At: &at}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Cancel(ctx, acme, gone.Task.Id); err != nil {
		t.Fatal(err)
	}
	h.settle()
	// Group g's tasks are acknowledged; group b's head fails twice and
	// becomes a dead letter that blocks its group.
	for acked, failed := 0, 0; acked < 20 || failed < 2; {
		a := h.next()
		if string(a.Task.Payload) != "head" {
			h.ack(a)
			acked++
			continue
		}
		h.fail(a, errRefused)
		if failed++; failed == 1 {
			h.advance(time.Second)
		}
	}
	dls, _, err := h.s.DeadLetters(ctx, acme, "acme", 0, 10)
	if err != nil || len(dls) != 1 {
		t.Fatalf("dead letters: %d, %v", len(dls), err)
	}
	if _, err := h.s.Replay(ctx, acme, store.DeadLetterID(dls[0])); err != nil {
		t.Fatal(err)
	}
	h.ack(h.expect("head", 1))
	h.ack(h.expect("next", 1))
	h.advance(time.Minute)
	h.ack(h.expect("every", 1))
	h.advance(2 * time.Hour) // past the keys' retention, and a sweep
	for {
		select {
		case a := <-h.del.attempts:
			h.ack(a)
			continue
		default:
		}
		break
	}
	h.close()

	replayed, err := store.Open(t.TempDir(), store.Options{Shards: h.st.Shards()})
	if err != nil {
		t.Fatal(err)
	}
	defer replayed.Close()
	orig, err := store.Open(h.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	for shard := range uint16(orig.Shards()) {
		replayShard(t, orig, replayed, shard)
		if a, b := encodedShard(t, orig, shard), encodedShard(t, replayed, shard); !bytes.Equal(a, b) {
			t.Fatalf("shard %d: replaying its log gave different state (%d bytes, the scheduler's %d)", shard, len(b), len(a))
		}
	}
}

// replayShard applies the shard's whole log from from to an empty to.
func replayShard(t *testing.T, from, to *store.Store, shard uint16) {
	t.Helper()
	l, err := from.RaftLog(shard)
	if err != nil {
		t.Fatal(err)
	}
	if l.Truncated.GetIndex() > 1 {
		t.Fatalf("shard %d: the log was truncated at %d", shard, l.Truncated.GetIndex())
	}
	if len(l.Entries) == 0 {
		return
	}
	var lastID uint64
	b := to.NewStateBatch()
	for _, e := range l.Entries {
		err := applyEntry(b, shard, e, func(_ uint16, id uint64) { lastID = max(lastID, id) }, func(store.EntryCommand) {})
		if err != nil {
			t.Fatal(err)
		}
	}
	meta, err := from.ShardMeta(shard)
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler's state includes the log up to its applied index;
	// entries after it (none, after a clean stop) would be replayed.
	if meta.GetApplied() != l.Entries[len(l.Entries)-1].GetIndex() {
		t.Fatalf("shard %d: applied %d, log ends at %d", shard, meta.GetApplied(), l.Entries[len(l.Entries)-1].GetIndex())
	}
	if err := b.SetApplied(shard, meta.GetApplied(), lastID); err != nil {
		t.Fatal(err)
	}
	if err := to.Commit(b); err != nil && !errors.Is(err, store.ErrInvalid) {
		t.Fatal(err)
	}
}

func encodedShard(t *testing.T, s *store.Store, shard uint16) []byte {
	t.Helper()
	ss, err := s.SnapshotShard(shard)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	data, err := ss.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

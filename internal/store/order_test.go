package store

import (
	"cmp"
	"slices"
	"testing"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// The dead letter index tells failure time and blocking without reading
// a record, shard by shard in id order.
func TestDeadLetterRefs(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	var want []DeadLetterRef
	commit(t, s, func(b *Batch) {
		for i, g := range []string{"a", "b", "a", "c", "a"} {
			tk := task("acme", g, uint64(i+1), 0)
			d := &storepb.DeadLetter{Id: MakeID(ShardOf(tk.Id), uint64(100+i)), Task: tk, FailedMs: int64(1000 + i), BlocksGroup: i == 2}
			if err := b.PutDeadLetter(d); err != nil {
				t.Fatal(err)
			}
			want = append(want, DeadLetterRef{ID: d.Id, Client: "acme", FailedMs: d.FailedMs, BlocksGroup: d.BlocksGroup})
		}
		b.PutDeadLetter(&storepb.DeadLetter{Task: task("other", "a", 9, 0), FailedMs: 5})
	})
	slices.SortFunc(want, func(a, b DeadLetterRef) int { return cmp.Compare(a.ID, b.ID) })
	refs := func(client string, perShard int) []DeadLetterRef {
		var got []DeadLetterRef
		for shard := range uint16(DefaultShards) {
			n := 0
			if err := s.DeadLetterRefs(shard, client, func(r DeadLetterRef) bool {
				got = append(got, r)
				n++
				return perShard == 0 || n < perShard
			}); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	if got := refs("acme", 0); !slices.Equal(got, want) {
		t.Fatalf("refs %+v\nwant %+v", got, want)
	}
	shards := map[uint16]bool{}
	for _, r := range want {
		shards[ShardOf(r.ID)] = true
	}
	shards[GroupShardOf(DefaultShards, "other", "a")] = true
	if got := refs("", 1); len(got) != len(shards) {
		t.Fatalf("one per shard: %d refs, want %d", len(got), len(shards))
	}
}

// Idempotency keys come back oldest first, per shard.
func TestScanIdempotencyOldestFirst(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	commit(t, s, func(b *Batch) {
		for i, at := range []int64{50, -3, 7, 7, 1_700_000_000_000} {
			b.PutIdempotency(4, "acme", string(rune('a'+i)), MakeID(4, uint64(i+1)), at)
		}
		b.PutIdempotency(5, "acme", "elsewhere", MakeID(5, 1), 0)
	})
	var got []IdempotencyKey
	if err := s.ScanIdempotency(4, func(k IdempotencyKey) bool {
		got = append(got, k)
		return len(got) < 4
	}); err != nil {
		t.Fatal(err)
	}
	want := []IdempotencyKey{{"acme", "b", -3}, {"acme", "c", 7}, {"acme", "d", 7}, {"acme", "a", 50}}
	if !slices.Equal(got, want) {
		t.Fatalf("ScanIdempotency = %v, want %v", got, want)
	}
}

package shard_test

import (
	"fmt"
	"testing"

	"github.com/boomerangd/boomerang/internal/shard"
	"github.com/boomerangd/boomerang/internal/store"
)

// The answers of the store's first format, pinned: they are on disk.
var groupVectors = []struct {
	client, group string
	shard         uint16 // among 256 shards
}{
	{"", "", 32},
	{"acme", "orders", 90},
	{"client-1", "group-1", 247},
	{"ünïcode", "グループ", 199},
}

func TestOfGroupVectors(t *testing.T) {
	t.Parallel()
	for _, v := range groupVectors {
		if got := shard.OfGroup(256, v.client, v.group); got != v.shard {
			t.Errorf("OfGroup(256, %q, %q) = %d, want %d", v.client, v.group, got, v.shard)
		}
	}
}

// TestSameAsStore checks every mapping against the store's answers, for
// a real store of each shard count: the SDK routes by this package, the
// store keeps the data by its own.
func TestSameAsStore(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 64, 256} {
		st, err := store.Open(t.TempDir(), store.Options{Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		for i := range 500 {
			client, key := fmt.Sprintf("client-%d", i%7), fmt.Sprintf("key-%d", i)
			if got, want := shard.OfGroup(shards, client, key), st.GroupShard(client, key); got != want {
				t.Fatalf("%d shards: OfGroup(%q, %q) = %d, store says %d", shards, client, key, got, want)
			}
			if got, want := shard.OfReplaceKey(shards, client, key), st.ReplaceKeyShard(client, key); got != want {
				t.Fatalf("%d shards: OfReplaceKey(%q, %q) = %d, store says %d", shards, client, key, got, want)
			}
			if got, want := shard.OfIdempotencyKey(shards, client, key), st.GroupShard(client, "\x00"+key); got != want {
				t.Fatalf("%d shards: OfIdempotencyKey(%q, %q) = %d, store says %d", shards, client, key, got, want)
			}
			id := store.MakeID(uint16(i%shards), uint64(i+1))
			if got, want := shard.OfID(id), store.ShardOf(id); got != want || got != uint16(i%shards) {
				t.Fatalf("OfID(%#x) = %d, store says %d", id, got, want)
			}
		}
	}
}

func TestOfTask(t *testing.T) {
	t.Parallel()
	const shards = 64
	tests := []struct {
		name                    string
		group, idem, replaceKey string
		want                    uint16
		placed                  bool
	}{
		{"group wins over keys", "g", "i", "r", shard.OfGroup(shards, "c", "g"), true},
		{"idempotency key", "", "i", "r", shard.OfIdempotencyKey(shards, "c", "i"), true},
		{"replace key", "", "", "r", shard.OfReplaceKey(shards, "c", "r"), true},
		{"anywhere", "", "", "", 0, false},
	}
	for _, tt := range tests {
		got, placed := shard.OfTask(shards, "c", tt.group, tt.idem, tt.replaceKey)
		if got != tt.want || placed != tt.placed {
			t.Errorf("%s: OfTask = %d, %v; want %d, %v", tt.name, got, placed, tt.want, tt.placed)
		}
	}
}

package store

import (
	"encoding/binary"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// The replace key index follows the task records: a put adds an entry, a
// delete removes it, and a key shared by two tasks lists both.
func TestReplaceKeyIndex(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	first, second, other := task("acme", "g", 1, 10), task("acme", "g", 2, 20), task("acme", "g", 3, 30)
	first.ReplaceKey, second.ReplaceKey, other.ReplaceKey = "k", "k", "other"
	ungrouped := task("acme", "", 4, 10)
	ungrouped.ReplaceKey = "k"
	commit(t, s, func(b *Batch) {
		for _, tk := range []*storepb.Task{first, second, other, ungrouped} {
			if err := b.PutTask(tk); err != nil {
				t.Fatal(err)
			}
		}
	})
	ids := func(shard uint16, group, key string) []uint64 {
		var out []uint64
		if err := s.ReplaceKeyTasks(shard, "acme", group, key, func(id uint64) bool {
			out = append(out, id)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	shard := ShardOf(first.Id)
	if got := ids(shard, "g", "k"); !slices.Equal(got, []uint64{first.Id, second.Id}) {
		t.Fatalf("key k of group g: %x", got)
	}
	if got := ids(ShardOf(ungrouped.Id), "", "k"); !slices.Equal(got, []uint64{ungrouped.Id}) {
		t.Fatalf("ungrouped key k: %x", got)
	}
	moved := proto.Clone(second).(*storepb.Task)
	moved.DueMs = 5
	commit(t, s, func(b *Batch) {
		if err := b.ReplaceTask(second, moved); err != nil {
			t.Fatal(err)
		}
		if err := b.DeleteTask(first); err != nil {
			t.Fatal(err)
		}
	})
	if got := ids(shard, "g", "k"); !slices.Equal(got, []uint64{second.Id}) {
		t.Fatalf("after deleting the first: %x", got)
	}
	if got := ids(shard, "g", "other"); !slices.Equal(got, []uint64{other.Id}) {
		t.Fatalf("key other: %x", got)
	}
}

// A schema 2 store opens as schema 3: it has no replace keys to index.
func TestOpenUpgradesSchema2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	commit(t, s, func(b *Batch) {
		if err := b.PutTask(task("acme", "g", 1, 10)); err != nil {
			t.Fatal(err)
		}
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	setSchema(t, dir, binary.AppendUvarint(nil, 2))
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	v, closer, err := s.db.Get(schemaKey)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if got, _ := binary.Uvarint(v); got != SchemaVersion {
		t.Fatalf("schema %d after the upgrade, want %d", got, SchemaVersion)
	}
	if _, err := s.Task(task("acme", "g", 1, 10).Id); err != nil {
		t.Fatalf("task after the upgrade: %v", err)
	}
}

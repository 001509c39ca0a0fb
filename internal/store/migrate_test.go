package store

import (
	"encoding/binary"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A schema 1 store opens as schema 2 with every task, group, dead letter
// and idempotency key, indexed as schema 2 indexes them.
func TestMigrateFromSchema1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	shard := GroupShardOf(DefaultShards, "acme", "g")
	grouped := []*storepb.Task{task("acme", "g", 1, 50), task("acme", "g", 2, 50), task("acme", "g", 3, 10)}
	for _, tk := range grouped {
		tk.Seq = tk.Id
	}
	retrying := &storepb.Task{Id: MakeID(7, 1), Client: "acme", DueMs: 5, NextAttemptMs: 500, Attempts: 1}
	immediate := task("acme", "fast", 9, 20)
	immediate.Mode = storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
	immediate.Seq = immediate.Id
	dead := &storepb.DeadLetter{Id: MakeID(shard, 99), Task: task("acme", "g", 4, 1), FailedMs: 1234, BlocksGroup: true}
	commit(t, s, func(b *Batch) {
		for _, tk := range append(grouped, retrying, immediate) {
			b.PutTask(tk)
		}
		b.PutGroup(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: "g", Tasks: 3, BlockedTask: dead.Id, BlockedSinceMs: 7})
		b.PutGroup(&storepb.Group{Shard: uint32(GroupShardOf(DefaultShards, "acme", "fast")), Client: "acme", Group: "fast", Tasks: 1})
		b.PutDeadLetter(dead)
		b.PutIdempotency(7, "acme", "key", retrying.Id, 0)
	})
	want := slices.DeleteFunc(rawKeys(t, s), func(k keyParts) bool { return k.tag == tagIdemExpiry })
	downgradeToSchema1(t, s)
	closeStore(t, s)

	s = openStore(t, dir)
	defer closeStore(t, s)
	got := rawKeys(t, s)
	expiry := slices.DeleteFunc(slices.Clone(got), func(k keyParts) bool { return k.tag != tagIdemExpiry })
	got = slices.DeleteFunc(got, func(k keyParts) bool { return k.tag == tagIdemExpiry })
	if !slices.Equal(got, want) || len(expiry) != 1 {
		t.Fatalf("keys after the migration\n%+v\nwant\n%+v\nand one expiry entry, got %v", got, want, expiry)
	}
	for _, tk := range grouped {
		if m, err := s.Task(tk.Id); err != nil || m.Seq != tk.Id {
			t.Fatalf("task %d after the migration: %v, %v; want its id as its sequence", tk.Id, m, err)
		}
	}
	if g, err := s.Group(shard, "acme", "g"); err != nil || g.Tasks != 3 || g.BlockedTask != dead.Id {
		t.Fatalf("group after the migration: %v, %v", g, err)
	}
	if id, _, err := s.Idempotency(7, "acme", "key"); err != nil || id != retrying.Id {
		t.Fatalf("idempotency key after the migration: %d, %v", id, err)
	}
	if head, ok, err := s.GroupHead("acme", "g"); err != nil || !ok || head.ID != grouped[2].Id {
		t.Fatalf("group head after the migration: %+v, %v, %v", head, ok, err)
	}
}

// downgradeToSchema1 rewrites s as schema 1 wrote it: no order index,
// due entries without values at the due time, group sequence counters
// instead of ids and task counts, bare idempotency ids, empty dead
// letter index entries.
func downgradeToSchema1(t *testing.T, s *Store) {
	t.Helper()
	b := s.db.NewBatch()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	err := scan(s.db, nil, nil, func(k, v []byte) error {
		p, err := decodeKey(k)
		if err != nil {
			return nil // the schema key
		}
		switch p.tag {
		case tagOrder, tagIdemExpiry, tagDue:
			must(b.Delete(k, nil))
		case tagTask:
			tk := new(storepb.Task)
			must(proto.Unmarshal(v, tk))
			must(b.Set(dueKey(tk.DueMs, tk.Id), nil, nil))
			if tk.Group != "" {
				tk.Seq = CounterOf(tk.Id) // a group counter
			}
			rec, _ := proto.Marshal(tk)
			must(b.Set(k, rec, nil))
		case tagGroup:
			g := new(storepb.Group)
			must(proto.Unmarshal(v, g))
			g.Tasks = 0
			rec, _ := proto.Marshal(g)
			must(b.Set(k, rec, nil))
		case tagIdempotency:
			must(b.Set(k, v[:8], nil))
		case tagDeadClient:
			must(b.Set(k, nil, nil))
		}
		return nil
	})
	must(err)
	must(b.Set(schemaKey, binary.AppendUvarint(nil, 1), nil))
	must(b.Commit(nil))
}

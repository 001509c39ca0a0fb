package store

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TestApplyMatchesModel applies random commands, as replicas do, several
// to a state batch (which reads its own writes and adds them to Pebble in
// key order), with flushes and compactions between batches, and checks
// that the store holds exactly the model's tasks. A task written once is deleted with a single
// delete: were one overwritten and then single-deleted, a compaction
// would bring its first version back, and the check would find it. The
// commands read the tasks they change through a TaskCache, which must
// hold only tasks as stored.
func TestApplyMatchesModel(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	rapid.Check(t, func(rt *rapid.T) {
		if err := s.db.DeleteRange([]byte{schemaKey[0] + 1}, []byte{0xff}, nil); err != nil {
			rt.Fatal(err)
		}
		tasks := map[uint64]*storepb.Task{}
		gone := map[uint64]bool{}
		next := uint64(0)
		b := s.NewStateBatch()
		cache := NewTaskCache(rapid.IntRange(1, 8).Draw(rt, "cache size"))
		commit := func() {
			must(rt, s.CommitNoSync(b))
			cache.Absorb(b)
			checkTaskCache(rt, cache, tasks)
			b = s.NewStateBatch()
		}
		for range rapid.IntRange(1, 30).Draw(rt, "commands") {
			c := NewCommand(storepb.Op_OP_UNSPECIFIED)
			ids := slices.Sorted(maps.Keys(tasks))
			switch k := rapid.IntRange(0, 2).Draw(rt, "kind"); {
			case len(ids) == 0 || k == 0:
				next++
				tk := &storepb.Task{Id: MakeID(uint16(next%2), next), Client: "a", Group: rapid.SampledFrom(modelGroups).Draw(rt, "group"),
					DueMs: rapid.Int64Range(0, 3).Draw(rt, "due"), Seq: next}
				must(rt, c.PutTask(tk))
				tasks[tk.Id] = tk
			case k == 1:
				old := tasks[rapid.SampledFrom(ids).Draw(rt, "replace")]
				updated := proto.Clone(old).(*storepb.Task)
				updated.DueMs = rapid.Int64Range(0, 3).Draw(rt, "new due")
				updated.Attempts++
				must(rt, c.ReplaceTask(old, updated))
				tasks[old.Id] = updated
			default:
				id := rapid.SampledFrom(ids).Draw(rt, "delete")
				must(rt, c.DeleteTask(tasks[id]))
				delete(tasks, id)
				gone[id] = true
			}
			e, err := DecodeEntry(AppendCommands(nil, []*Command{c}))
			must(rt, err)
			must(rt, b.Prefetch([]*Entry{e}, cache))
			must(rt, b.ApplyEntry(e, func(uint16, uint64) {}, func(EntryCommand) {}))
			if rapid.Bool().Draw(rt, "more in the batch") {
				continue
			}
			commit()
			switch rapid.IntRange(0, 4).Draw(rt, "then") {
			case 0:
				must(rt, s.db.Flush())
			case 1:
				must(rt, s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true))
			case 2:
				readThrough(rt, s, cache, tasks, gone)
			}
		}
		commit()
		for id, want := range tasks {
			got, err := s.Task(id)
			if err != nil || !proto.Equal(got, want) {
				rt.Fatalf("task %#x: %v, %v; want %v", id, got, err, want)
			}
		}
		for id := range gone {
			if got, err := s.Task(id); !errors.Is(err, ErrNotFound) {
				rt.Fatalf("deleted task %#x is back: %v, %v", id, got, err)
			}
		}
		for shard := range uint16(2) {
			n := 0
			must(rt, s.ScanDue(shard, minDue, maxDue, func(e DueEntry) error {
				n++
				if tasks[e.ID] == nil {
					rt.Fatalf("due index names task %#x, which is not there", e.ID)
				}
				return nil
			}))
			want := 0
			for id := range tasks {
				if ShardOf(id) == shard {
					want++
				}
			}
			if n != want {
				rt.Fatalf("shard %d: %d due entries, want %d", shard, n, want)
			}
		}
	})
}

// readThrough reads some of the tasks, live and deleted, through the
// cache, as a partition reads the tasks it starts, and checks what it
// gets and what the cache holds then.
func readThrough(rt *rapid.T, s *Store, c *TaskCache, tasks map[uint64]*storepb.Task, gone map[uint64]bool) {
	all := slices.Sorted(maps.Keys(tasks))
	all = append(all, slices.Collect(maps.Keys(gone))...)
	slices.Sort(all)
	var ids []uint64
	for _, id := range all {
		if rapid.Bool().Draw(rt, "read") {
			ids = append(ids, id)
		}
	}
	var got []uint64
	must(rt, c.Tasks(s, ids, func(id uint64, tk *storepb.Task) {
		got = append(got, id)
		if !proto.Equal(tk, tasks[id]) || tk != nil && tk.WrittenOnce {
			rt.Fatalf("task %#x read through the cache: %v; stored %v", id, tk, tasks[id])
		}
	}))
	if !slices.Equal(got, ids) {
		rt.Fatalf("read %x through the cache, got %x", ids, got)
	}
	checkTaskCache(rt, c, tasks)
}

// checkTaskCache checks that every task the cache holds is as stored,
// without written_once, and that it holds no more than its bound.
func checkTaskCache(rt *rapid.T, c *TaskCache, tasks map[uint64]*storepb.Task) {
	if c.Len() > c.max {
		rt.Fatalf("the cache holds %d tasks, more than %d", c.Len(), c.max)
	}
	for id, k := range c.m {
		k, err := k.decoded()
		if err != nil || !proto.Equal(k.t, tasks[id]) {
			rt.Fatalf("cached task %#x: %v (%v); stored %v", id, k.t, err, tasks[id])
		}
	}
}

// applyCommand applies c to b as a replica applies a log entry of it.
func applyCommand(b *Batch, c *Command) error {
	e, err := DecodeEntry(AppendCommands(nil, []*Command{c}))
	if err != nil {
		return err
	}
	return b.ApplyEntry(e, func(uint16, uint64) {}, func(EntryCommand) {})
}

func must(t interface{ Fatal(...any) }, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

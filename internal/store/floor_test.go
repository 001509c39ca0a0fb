package store

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Floors follow an order's writes and deletions, and a scan that a write
// may have raced is not remembered: a write between get and scanned, or
// a reset, voids it.
func TestFloorsFollowWritesAndRefuseARacedScan(t *testing.T) {
	prefix := namedKey(tagOrder, 1, "acme", "g")
	key := func(due int64) []byte { return orderKey(1, "acme", "g", due, 1, MakeID(1, uint64(due))) }
	var f floors
	want := func(what string, head []byte, known bool, from []byte) {
		t.Helper()
		h, k, fr, _ := f.get(prefix)
		if !bytes.Equal(h, head) || k != known || !bytes.Equal(fr, from) {
			t.Fatalf("%s: head %x known %v from %x, want %x %v %x", what, h, k, fr, head, known, from)
		}
	}
	front := func(dues ...int64) (out [][]byte) {
		for _, d := range dues {
			out = append(out, key(d))
		}
		return out
	}

	want("a new floor", nil, false, nil)
	_, _, _, gen := f.get(prefix)
	f.scanned(prefix, front(50, 60), false, gen)
	want("after a scan", key(50), true, nil)

	f.written([]orderWrite{{key: key(55)}, {key: key(70)}}) // inside the front, beyond it
	f.written([]orderWrite{{key: key(50), deleted: true}})
	want("after the head's deletion", key(55), true, nil)
	f.written([]orderWrite{{key: key(55), deleted: true}, {key: key(60), deleted: true}})
	want("after the front's end", nil, false, key(60))

	_, _, _, gen = f.get(prefix)
	f.written([]orderWrite{{key: key(90), deleted: true}}) // between get and scanned
	f.scanned(prefix, front(70), false, gen)
	want("after a raced scan", nil, false, key(60))

	f.written([]orderWrite{{key: key(20)}, {key: key(10)}})
	want("after writes below the floor", key(10), true, nil)

	_, _, _, gen = f.get(prefix)
	f.reset()
	f.scanned(prefix, front(70), false, gen)
	want("after a reset and a stale scan", nil, false, nil)

	_, _, _, gen = f.get(prefix)
	f.scanned(prefix, nil, true, gen)
	want("an empty group", nil, true, nil)
	for i := range frontLen + 2 {
		f.written([]orderWrite{{key: key(int64(100 - i))}})
	}
	want(fmt.Sprintf("after %d writes to an empty group", frontLen+2), key(100-frontLen-1), true, nil)
}

// A busy group's head, asked for after every batch, always matches a
// model of its order: the group runs far more tasks than a front holds,
// with tasks written before, inside and after the front.
func TestGroupHeadMatchesModel(t *testing.T) {
	s := openStore(t, t.TempDir())
	shard := GroupShardOf(DefaultShards, "acme", "g")
	var next uint64
	rapid.Check(t, func(rt *rapid.T) {
		if err := s.db.DeleteRange([]byte{schemaKey[0] + 1}, []byte{0xff}, nil); err != nil {
			rt.Fatal(err)
		}
		s.floors.reset() // the range deletion went around the store
		live := map[uint64]*storepb.Task{}
		for range rapid.IntRange(1, 60).Draw(rt, "batches") {
			b := s.NewBatch()
			for range rapid.IntRange(1, 3).Draw(rt, "ops") {
				ids := slices.SortedFunc(maps.Keys(live), func(a, b uint64) int { return cmp.Compare(live[a].DueMs, live[b].DueMs) })
				kind := rapid.IntRange(0, 3).Draw(rt, "kind")
				if len(ids) == 0 || kind > 1 {
					next++
					tk := &storepb.Task{Id: MakeID(shard, next), Client: "acme", Group: "g", DueMs: rapid.Int64Range(0, 20).Draw(rt, "due"), Seq: next}
					b.PutTask(tk)
					live[tk.Id] = tk
					continue
				}
				tk := live[ids[0]] // the head, as a group runs it
				if kind == 1 {
					tk = live[rapid.SampledFrom(ids).Draw(rt, "id")]
				}
				b.DeleteTask(tk)
				delete(live, tk.Id)
			}
			if err := s.Commit(b); err != nil {
				rt.Fatal(err)
			}
			var want OrderEntry
			for _, tk := range live {
				if e := (OrderEntry{Due: tk.DueMs, Seq: tk.Seq, ID: tk.Id}); want.ID == 0 || e.Less(want) {
					want = e
				}
			}
			got, ok, err := s.GroupHead("acme", "g")
			if err != nil || ok != (len(live) > 0) || got != want {
				rt.Fatalf("GroupHead = %+v, %v, %v; want %+v of %d live", got, ok, err, want, len(live))
			}
		}
	})
}

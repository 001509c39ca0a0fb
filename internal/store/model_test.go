package store

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TestStoreMatchesModel runs random batches of task and dead letter
// changes against the store and a map, then checks that every read path
// and the raw indexes agree with the map.
func TestStoreMatchesModel(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	rapid.Check(t, func(rt *rapid.T) {
		if err := s.db.DeleteRange([]byte{schemaKey[0] + 1}, []byte{0xff}, nil); err != nil {
			rt.Fatal(err)
		}
		s.floors.reset() // the range deletion went around the store
		m := &storeModel{s: s, tasks: map[uint64]*storepb.Task{}, dead: map[uint64]*storepb.DeadLetter{}}
		// Checking after every batch would find a bug one batch sooner,
		// at many times the cost under the race detector.
		for range rapid.IntRange(1, 40).Draw(rt, "batches") {
			m.batch(rt)
			m.checkHeads(rt)
		}
		m.check(rt)
	})
}

type storeModel struct {
	s     *Store
	tasks map[uint64]*storepb.Task
	dead  map[uint64]*storepb.DeadLetter
	next  uint64
}

var (
	modelClients = []string{"a", "b", "ab"}
	modelGroups  = []string{"", "g", "h", "gh"}
)

// batch commits one to four random changes in one batch.
func (m *storeModel) batch(rt *rapid.T) {
	b := m.s.NewBatch()
	for range rapid.IntRange(1, 4).Draw(rt, "ops") {
		m.change(rt, b)
	}
	if err := m.s.Commit(b); err != nil {
		rt.Fatal(err)
	}
}

func (m *storeModel) change(rt *rapid.T, b *Batch) {
	due := rapid.Int64Range(-3, 3).Draw(rt, "due")
	ids := slices.Sorted(maps.Keys(m.tasks))
	if len(ids) == 0 || rapid.IntRange(0, 3).Draw(rt, "kind") == 0 {
		client := rapid.SampledFrom(modelClients).Draw(rt, "client")
		group := rapid.SampledFrom(modelGroups).Draw(rt, "group")
		m.next++
		tk := &storepb.Task{Id: MakeID(GroupShardOf(DefaultShards, client, group), m.next), Client: client, Group: group, DueMs: due}
		b.PutTask(tk)
		m.tasks[tk.Id] = tk
		return
	}
	old := m.tasks[rapid.SampledFrom(ids).Draw(rt, "id")]
	switch rapid.IntRange(0, 2).Draw(rt, "change") {
	case 0: // reschedule
		updated := proto.Clone(old).(*storepb.Task)
		updated.DueMs = due
		updated.Attempts++
		b.ReplaceTask(old, updated)
		m.tasks[old.Id] = updated
	case 1: // done
		b.DeleteTask(old)
		delete(m.tasks, old.Id)
	case 2: // failed for good: to the dead letter queue, in the same batch
		b.DeleteTask(old)
		d := &storepb.DeadLetter{Task: old, LastError: "gave up"}
		b.PutDeadLetter(d)
		delete(m.tasks, old.Id)
		m.dead[old.Id] = d
		if dl := slices.Sorted(maps.Keys(m.dead)); len(dl) > 1 && rapid.Bool().Draw(rt, "drop dead letter") {
			id := rapid.SampledFrom(dl).Draw(rt, "dead id")
			b.DeleteDeadLetter(m.dead[id])
			delete(m.dead, id)
		}
	}
}

// checkHeads compares every group's head with the model's after each
// batch: GroupHead starts at a floor its earlier answers raised, which
// each write of an order entry below it must lower again.
func (m *storeModel) checkHeads(rt *rapid.T) {
	for _, client := range modelClients {
		for _, group := range modelGroups[1:] {
			var want OrderEntry
			found := false
			for _, tk := range m.tasks {
				e := OrderEntry{Due: tk.DueMs, Seq: tk.Seq, ID: tk.Id}
				if tk.Client == client && tk.Group == group && (!found || e.Less(want) || !want.Less(e) && e.ID < want.ID) {
					want, found = e, true
				}
			}
			got, ok, err := m.s.GroupHead(client, group)
			if err != nil || ok != found || got != want {
				rt.Fatalf("GroupHead(%q, %q) = %+v, %v, %v; want %+v, %v", client, group, got, ok, err, want, found)
			}
		}
	}
}

func (m *storeModel) check(rt *rapid.T) {
	// Due index, per shard, in (due, id) order, with records.
	byShard := map[uint16][]*storepb.Task{}
	for _, tk := range m.tasks {
		byShard[ShardOf(tk.Id)] = append(byShard[ShardOf(tk.Id)], tk)
	}
	for _, client := range modelClients {
		for _, group := range modelGroups {
			shard := GroupShardOf(DefaultShards, client, group)
			want := byShard[shard]
			slices.SortFunc(want, func(a, b *storepb.Task) int {
				return cmp.Or(cmp.Compare(a.DueMs, b.DueMs), cmp.Compare(a.Id, b.Id))
			})
			var got []*storepb.Task
			if err := m.s.ScanDue(shard, minDue, maxDue, func(e DueEntry) error {
				tk, err := m.s.Task(e.ID)
				if err == nil && string(e.Group) != dueGroup(tk) {
					err = fmt.Errorf("task %#x: due entry names group %q", e.ID, e.Group)
				}
				got = append(got, tk)
				return err
			}); err != nil {
				rt.Fatal(err)
			}
			if !slices.EqualFunc(got, want, func(a, b *storepb.Task) bool { return proto.Equal(a, b) }) {
				rt.Fatalf("shard %d: due index %v\nwant %v", shard, got, want)
			}
		}
	}
	// Lists, by client and group.
	for _, q := range []TaskQuery{{}, {Client: "a"}, {Client: "ab"}, {Client: "b", Group: "g"}, {Client: "a", Group: ""}, {Group: "gh"}} {
		q.Limit = 2
		var got []uint64
		for {
			page, next, err := m.s.ListTasks(q)
			if err != nil {
				rt.Fatal(err)
			}
			for _, tk := range page {
				got = append(got, tk.Id)
			}
			if next == 0 {
				break
			}
			q.After = next
		}
		var want []uint64
		for id, tk := range m.tasks {
			if (q.Client == "" || tk.Client == q.Client) && (q.Group == "" || tk.Group == q.Group) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			rt.Fatalf("ListTasks(%q, %q) = %x, want %x", q.Client, q.Group, got, want)
		}
	}
	for _, client := range append([]string{""}, modelClients...) {
		dls, _, err := m.s.ListDeadLetters(client, 0, MaxLimit)
		if err != nil {
			rt.Fatal(err)
		}
		var want int
		for _, d := range m.dead {
			if client == "" || d.Task.Client == client {
				want++
			}
		}
		if len(dls) != want {
			rt.Fatalf("ListDeadLetters(%q): %d, want %d", client, len(dls), want)
		}
	}
	// Nothing else in the raw key spaces: three keys per task and one
	// more for an ordered one, two per dead letter.
	counts := map[byte]int{}
	for _, k := range rawKeys(rt, m.s) {
		counts[k.tag]++
	}
	ordered := 0
	for _, tk := range m.tasks {
		if Ordered(tk) {
			ordered++
		}
	}
	want := map[byte]int{}
	for tag, n := range map[byte]int{
		tagTask: len(m.tasks), tagDue: len(m.tasks), tagClientIndex: len(m.tasks), tagOrder: ordered,
		tagDeadLetter: len(m.dead), tagDeadClient: len(m.dead),
	} {
		if n > 0 {
			want[tag] = n
		}
	}
	if !maps.Equal(counts, want) {
		rt.Fatalf("raw key counts %v, want %v", fmtCounts(counts), fmtCounts(want))
	}
}

func fmtCounts(c map[byte]int) string {
	s := ""
	for _, tag := range slices.Sorted(maps.Keys(c)) {
		s += fmt.Sprintf("%c:%d ", tag, c[tag])
	}
	return s
}

// dueGroup is what a task's due index entry holds.
func dueGroup(tk *storepb.Task) string {
	if Ordered(tk) {
		return GroupRef(tk.Client, tk.Group)
	}
	return ""
}

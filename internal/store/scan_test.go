package store

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

type dueEntry struct {
	due int64
	id  uint64
}

func scanDueEntries(t *testing.T, s *Store, shard uint16, from, to int64) []dueEntry {
	t.Helper()
	var got []dueEntry
	if err := s.ScanDue(shard, from, to, func(e DueEntry) error {
		got = append(got, dueEntry{e.Due, e.ID})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestScanDueOrderAndBounds(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	const shard = 5
	id := func(n uint64) uint64 { return MakeID(shard, n) }
	// Inserted out of order; equal dues must come back by id.
	entries := []dueEntry{
		{0, id(7)}, {-1, id(3)}, {math.MinInt64, id(9)}, {10, id(2)}, {0, id(1)},
		{10, id(8)}, {-1000, id(4)}, {math.MaxInt64 - 1, id(5)}, {10, id(6)},
	}
	commit(t, s, func(b *Batch) {
		for _, e := range entries {
			b.PutTask(&storepb.Task{Id: e.id, Client: "c", DueMs: e.due})
		}
		// Another shard's entries are never seen.
		b.PutTask(&storepb.Task{Id: MakeID(shard+1, 1), Client: "c", DueMs: 0})
		b.PutTask(&storepb.Task{Id: MakeID(shard-1, 1), Client: "c", DueMs: 0})
	})
	all := []dueEntry{
		{math.MinInt64, id(9)}, {-1000, id(4)}, {-1, id(3)}, {0, id(1)}, {0, id(7)},
		{10, id(2)}, {10, id(6)}, {10, id(8)}, {math.MaxInt64 - 1, id(5)},
	}
	cases := []struct {
		from, to int64
		want     []dueEntry
	}{
		{minDue, maxDue, all},
		{-1, 10, all[2:5]},              // from inclusive, to exclusive
		{0, 1, all[3:5]},                // zero
		{10, 11, all[5:8]},              // equal dues by id
		{-999, -1, nil},                 // gap
		{10, 10, nil},                   // empty range
		{11, 10, nil},                   // inverted range
		{math.MinInt64, -1000, all[:1]}, // negative edge
		{math.MaxInt64 - 1, maxDue, all[8:]},
	}
	for _, c := range cases {
		if got := scanDueEntries(t, s, shard, c.from, c.to); !slices.Equal(got, c.want) {
			t.Errorf("ScanDue [%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}

	// An error from fn stops the scan and is returned as is.
	stop := errors.New("enough")
	calls := 0
	err := s.ScanDue(shard, minDue, maxDue, func(DueEntry) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Fatalf("ScanDue = %v after %d calls, want the callback's error after 3", err, calls)
	}
}

// An ordered task's due entry names its group; other tasks' name none.
// A group's order is (due, seq), whatever the ids.
func TestDueEntriesAndGroupOrder(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	shard := GroupShardOf(DefaultShards, "acme", "g")
	immediate := task("acme", "g", 30, 50)
	immediate.Mode = storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
	commit(t, s, func(b *Batch) {
		for n := uint64(1); n <= 20; n++ {
			tk := task("acme", "g", n, int64(100-n/2))
			tk.Seq = 100 - n // acceptance order opposite to id order
			b.PutTask(tk)
		}
		b.PutTask(immediate)
	})
	groups := map[string]int{}
	if err := s.ScanDue(shard, minDue, maxDue, func(e DueEntry) error {
		groups[string(e.Group)]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{GroupRef("acme", "g"): 20, "": 1}; !maps.Equal(groups, want) {
		t.Fatalf("due entries by group %v, want %v", groups, want)
	}
	var order []OrderEntry
	if err := s.GroupOrder("acme", "g", func(e OrderEntry) bool {
		order = append(order, e)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(order) != 20 || !slices.IsSortedFunc(order, func(a, b OrderEntry) int {
		return cmp.Or(cmp.Compare(a.Due, b.Due), cmp.Compare(a.Seq, b.Seq))
	}) {
		t.Fatalf("group order %v", order)
	}
	// Due 90 holds n = 20 (seq 80) only; due 91 holds n = 18, 19 (seq 82, 81).
	if head, ok, err := s.GroupHead("acme", "g"); err != nil || !ok || head != (OrderEntry{Due: 90, Seq: 80, ID: MakeID(shard, 20)}) {
		t.Fatalf("GroupHead = %+v, %v, %v", head, ok, err)
	}
	if order[1].ID != MakeID(shard, 19) || order[2].ID != MakeID(shard, 18) {
		t.Fatalf("equal due times not in seq order: %v", order[:3])
	}
	if _, ok, err := s.GroupHead("acme", "other"); ok || err != nil {
		t.Fatalf("GroupHead of an empty group: %v, %v", ok, err)
	}
}

// listModel is the reference for ListTasks: all tasks, filtered, in id
// order.
func listModel(tasks []*storepb.Task, keep func(*storepb.Task) bool) []uint64 {
	var ids []uint64
	for _, tk := range tasks {
		if keep(tk) {
			ids = append(ids, tk.Id)
		}
	}
	slices.Sort(ids)
	return ids
}

// pageAll follows cursors to the end and checks every page's size.
func pageAll(t *testing.T, q TaskQuery, list func(TaskQuery) ([]*storepb.Task, uint64, error)) []uint64 {
	t.Helper()
	var ids []uint64
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("cursor never ends")
		}
		tasks, next, err := list(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range tasks {
			ids = append(ids, tk.Id)
		}
		if next == 0 {
			return ids
		}
		if len(tasks) != q.Limit {
			t.Fatalf("page of %d tasks with a cursor, want a full page of %d", len(tasks), q.Limit)
		}
		if next != tasks[len(tasks)-1].Id {
			t.Fatalf("cursor %#x, want the last id %#x", next, tasks[len(tasks)-1].Id)
		}
		q.After = next
	}
}

func TestListTasksPaging(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	var tasks []*storepb.Task
	for i := range uint64(600) {
		c := fmt.Sprintf("client-%d", i%3)
		g := fmt.Sprintf("group-%d", i%40) // 40 groups spread over many shards
		if i%10 == 0 {
			g = ""
		}
		tk := task(c, g, i+1, int64(i%17))
		tk.IntervalMs = int64(i % 2)
		tasks = append(tasks, tk)
	}
	commit(t, s, func(b *Batch) {
		for _, tk := range tasks {
			b.PutTask(tk)
		}
	})
	recurring := func(tk *storepb.Task) bool { return tk.IntervalMs != 0 }
	cases := []struct {
		name string
		q    TaskQuery
		keep func(*storepb.Task) bool
	}{
		{"all", TaskQuery{}, func(*storepb.Task) bool { return true }},
		{"all recurring", TaskQuery{Match: recurring}, recurring},
		{"one client", TaskQuery{Client: "client-1"}, func(tk *storepb.Task) bool { return tk.Client == "client-1" }},
		{"client and group", TaskQuery{Client: "client-2", Group: "group-5"},
			func(tk *storepb.Task) bool { return tk.Client == "client-2" && tk.Group == "group-5" }},
		{"client, group, match", TaskQuery{Client: "client-0", Group: "group-3", Match: recurring},
			func(tk *storepb.Task) bool { return tk.Client == "client-0" && tk.Group == "group-3" && recurring(tk) }},
		{"group of all clients", TaskQuery{Group: "group-7"}, func(tk *storepb.Task) bool { return tk.Group == "group-7" }},
		{"no such client", TaskQuery{Client: "nobody"}, func(*storepb.Task) bool { return false }},
		{"due range", TaskQuery{Client: "client-1", Match: func(tk *storepb.Task) bool { return tk.DueMs >= 3 && tk.DueMs < 9 }},
			func(tk *storepb.Task) bool { return tk.Client == "client-1" && tk.DueMs >= 3 && tk.DueMs < 9 }},
	}
	for _, c := range cases {
		want := listModel(tasks, c.keep)
		for _, limit := range []int{1, 7, 100, 1000} {
			q := c.q
			q.Limit = limit
			if got := pageAll(t, q, s.ListTasks); !slices.Equal(got, want) {
				t.Errorf("%s, limit %d: %d ids, want %d\ngot  %x\nwant %x", c.name, limit, len(got), len(want), got, want)
			}
		}
	}
}

// TestListTasksGroupReadsOneShard proves the Client+Group fast path reads
// only the group's shard: an entry planted in another shard's client index
// under the same client would otherwise be reported.
func TestListTasksGroupReadsOneShard(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	shard := GroupShardOf(DefaultShards, "acme", "orders")
	in := task("acme", "orders", 1, 0)
	elsewhere := &storepb.Task{Id: MakeID((shard+1)%DefaultShards, 1), Client: "acme", Group: "orders"}
	commit(t, s, func(b *Batch) {
		b.PutTask(in)
		b.PutTask(elsewhere)
	})
	tasks, next, err := s.ListTasks(TaskQuery{Client: "acme", Group: "orders"})
	if err != nil || next != 0 || len(tasks) != 1 || tasks[0].Id != in.Id {
		t.Fatalf("ListTasks = %v, %#x, %v; want only %#x", tasks, next, err, in.Id)
	}
	all, _, err := s.ListTasks(TaskQuery{Client: "acme"})
	if err != nil || len(all) != 2 {
		t.Fatalf("ListTasks(client) = %d tasks, %v; want both", len(all), err)
	}
}

func TestListTasksLimits(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	var ids []uint64
	commit(t, s, func(b *Batch) {
		for n := uint64(1); n <= MaxLimit+5; n++ {
			id := MakeID(uint16(n%DefaultShards), n)
			ids = append(ids, id)
			b.PutTask(&storepb.Task{Id: id, Client: "c"})
		}
	})
	slices.Sort(ids)
	for _, c := range []struct{ limit, want int }{{0, DefaultLimit}, {-3, DefaultLimit}, {MaxLimit + 500, MaxLimit}, {5, 5}} {
		tasks, next, err := s.ListTasks(TaskQuery{Limit: c.limit})
		if err != nil || len(tasks) != c.want || next == 0 {
			t.Errorf("Limit %d: %d tasks, cursor %#x, %v; want %d and a cursor", c.limit, len(tasks), next, err, c.want)
		}
	}
	if tasks, next, err := s.ListTasks(TaskQuery{After: math.MaxUint64}); err != nil || len(tasks) != 0 || next != 0 {
		t.Errorf("After max: %d tasks, %#x, %v", len(tasks), next, err)
	}
	// An exactly full last page has no cursor.
	tasks, next, err := s.ListTasks(TaskQuery{Limit: MaxLimit, After: ids[4]})
	if err != nil || next != 0 || len(tasks) != MaxLimit {
		t.Errorf("exact last page: %d tasks, cursor %#x, %v; want %d and no cursor", len(tasks), next, err, MaxLimit)
	}
}

func TestListDeadLettersPaging(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	var all []*storepb.DeadLetter
	for i := range uint64(300) {
		tk := task(fmt.Sprintf("client-%d", i%2), fmt.Sprintf("g%d", i%25), i+1, 0)
		all = append(all, &storepb.DeadLetter{Task: tk, LastError: "boom", Attempts: 3})
	}
	commit(t, s, func(b *Batch) {
		for _, d := range all {
			b.PutDeadLetter(d)
		}
	})
	list := func(client string) func(TaskQuery) ([]*storepb.Task, uint64, error) {
		return func(q TaskQuery) ([]*storepb.Task, uint64, error) {
			dls, next, err := s.ListDeadLetters(client, q.After, q.Limit)
			var tasks []*storepb.Task
			for _, d := range dls {
				if d.LastError != "boom" {
					return nil, 0, fmt.Errorf("dead letter not loaded: %v", d)
				}
				tasks = append(tasks, d.Task)
			}
			return tasks, next, err
		}
	}
	var tasks []*storepb.Task
	for _, d := range all {
		tasks = append(tasks, d.Task)
	}
	for _, client := range []string{"", "client-0", "client-1", "nobody"} {
		want := listModel(tasks, func(tk *storepb.Task) bool { return client == "" || tk.Client == client })
		for _, limit := range []int{1, 13, 1000} {
			if got := pageAll(t, TaskQuery{Limit: limit}, list(client)); !slices.Equal(got, want) {
				t.Errorf("client %q, limit %d: %d ids, want %d", client, limit, len(got), len(want))
			}
		}
	}
}

func TestScanGroupsAndListClients(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	commit(t, s, func(b *Batch) {
		for _, g := range []struct{ client, group string }{{"bb", "x"}, {"a", "zz"}, {"a", "y"}, {"c", ""}} {
			b.PutGroup(&storepb.Group{Shard: 9, Client: g.client, Group: g.group})
		}
		b.PutGroup(&storepb.Group{Shard: 10, Client: "a", Group: "other shard"})
		for _, id := range []string{"zeta", "alpha", "mu", "beta-longer"} {
			b.PutClient(client(id))
		}
	})
	var groups []string
	if err := s.ScanGroups(9, func(g *storepb.Group) error {
		groups = append(groups, g.Client+"/"+g.Group)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Key order: shorter client first, then shorter group.
	if want := []string{"a/y", "a/zz", "c/", "bb/x"}; !slices.Equal(groups, want) {
		t.Errorf("ScanGroups = %v, want %v", groups, want)
	}
	clients, err := s.ListClients()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range clients {
		ids = append(ids, c.Id)
	}
	if want := []string{"alpha", "beta-longer", "mu", "zeta"}; !slices.Equal(ids, want) {
		t.Errorf("ListClients = %v, want %v", ids, want)
	}
}

// TestCorruptRecordsAreReported writes undecodable values under each record
// key space and checks every read path reports ErrCorrupt.
func TestCorruptRecordsAreReported(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	tk := task("acme", "orders", 1, 10)
	shard := ShardOf(tk.Id)
	commit(t, s, func(b *Batch) {
		b.PutTask(tk)
		b.PutDeadLetter(&storepb.DeadLetter{Task: tk})
		b.PutIdempotency(shard, "acme", "k", tk.Id, 1)
	})
	junk := []byte{0xff, 0xff, 0xff} // an invalid protobuf tag
	for _, k := range [][]byte{
		taskKey(tk.Id), deadLetterKey(tk.Id), groupKey(shard, "acme", "orders"),
		shardMetaKey(shard), clientKey("acme"),
	} {
		if err := s.db.Set(k, junk, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Set(idempotencyKey(shard, "acme", "k"), []byte{1, 2, 3}, nil); err != nil {
		t.Fatal(err)
	}
	reads := map[string]error{
		"Task":            second(s.Task(tk.Id)),
		"DeadLetter":      second(s.DeadLetter(tk.Id)),
		"Group":           second(s.Group(shard, "acme", "orders")),
		"ShardMeta":       second(s.ShardMeta(shard)),
		"Client":          second(s.Client("acme")),
		"Idempotency":     third(s.Idempotency(shard, "acme", "k")),
		"ListTasks":       third(s.ListTasks(TaskQuery{})),
		"ListTasksClient": third(s.ListTasks(TaskQuery{Client: "acme"})),
		"ListDeadLetters": third(s.ListDeadLetters("", 0, 0)),
		"ListDLQClient":   third(s.ListDeadLetters("acme", 0, 0)),
		"ScanGroups":      s.ScanGroups(shard, func(*storepb.Group) error { return nil }),
		"ListClients":     second(s.ListClients()),
	}
	for name, err := range reads {
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s = %v, want ErrCorrupt", name, err)
		}
	}

	// A malformed index key is corruption too.
	if err := s.db.Set(append(dueKey(0, MakeID(shard, 2)), 0), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.ScanDue(shard, minDue, maxDue, func(DueEntry) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ScanDue over a malformed key = %v, want ErrCorrupt", err)
	}
}

func third[T, U any](_ T, _ U, err error) error { return err }

func TestScanBlockedGroupsFollowsPutAndUnblock(t *testing.T) {
	s := openStore(t, t.TempDir())
	shard := GroupShardOf(DefaultShards, "acme", "g1")
	put := func(groups ...*storepb.Group) {
		t.Helper()
		b := s.NewBatch()
		for _, g := range groups {
			b.PutGroup(g)
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	blocked := func() []string {
		t.Helper()
		var names []string
		if err := s.ScanBlockedGroups(shard, func(g *storepb.Group) error {
			names = append(names, g.Group)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return names
	}
	other := "g2"
	for GroupShardOf(DefaultShards, "acme", other) != shard {
		other += "x"
	}
	put(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: "g1", BlockedTask: MakeID(shard, 7)},
		&storepb.Group{Shard: uint32(shard), Client: "acme", Group: other, Tasks: 3})
	if got := blocked(); len(got) != 1 || got[0] != "g1" {
		t.Fatalf("blocked groups %v, want [g1]", got)
	}
	put(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: "g1", Tasks: 2}) // not blocked, again
	if got := blocked(); len(got) != 1 || got[0] != "g1" {
		t.Fatalf("blocked groups %v after PutGroup alone, want [g1] until UnblockGroup", got)
	}
	ub := s.NewBatch()
	ub.UnblockGroup(shard, "acme", "g1")
	if err := s.Commit(ub); err != nil {
		t.Fatal(err)
	}
	if got := blocked(); len(got) != 0 {
		t.Fatalf("blocked groups after unblocking %v", got)
	}
	put(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: other, BlockedTask: MakeID(shard, 9)})
	b := s.NewBatch()
	b.UnblockGroup(shard, "acme", other)
	b.DeleteGroup(shard, "acme", other)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if got := blocked(); len(got) != 0 {
		t.Fatalf("blocked groups after unblock and delete %v", got)
	}
}

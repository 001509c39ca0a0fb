package store

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// fullTask sets every field, so a round trip proves nothing is dropped.
func fullTask() *storepb.Task {
	return &storepb.Task{
		Id:             MakeID(GroupShardOf(DefaultShards, "acme", "orders"), 42),
		Client:         "acme",
		Group:          "orders",
		Payload:        []byte{0, 1, 2, 0xff},
		DueMs:          1_700_000_000_000,
		IntervalMs:     60_000,
		Seq:            9,
		Mode:           storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
		IdempotencyKey: "order-17",
		Retry: &storepb.RetryPolicy{
			Backoff: storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL, InitialIntervalMs: 100,
			MaxIntervalMs: 10_000, Multiplier: 2, Jitter: 0.2, MaxAttempts: 5,
		},
		Callback:      &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_HTTP, Endpoint: "https://x/cb", TimeoutMs: 500, Pool: "slow"},
		Attempts:      2,
		NextAttemptMs: 1_700_000_000_500,
		LastError:     "503",
		CreatedMs:     1_600_000_000_000,
		UpdatedMs:     1_650_000_000_000,
		Fires:         3,
	}
}

func TestTaskRoundTrip(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	want := fullTask()
	commit(t, s, func(b *Batch) { b.PutTask(want) })

	got, err := s.Task(want.Id)
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, got, want)

	shard := ShardOf(want.Id)
	wantKeys := []keyParts{
		{tag: tagClientIndex, shard: shard, id: want.Id, a: "acme"},
		{tag: tagDue, shard: shard, id: want.Id, due: WakeMs(want)}, // the next attempt's time
		{tag: tagOrder, shard: shard, a: "acme", b: "orders", due: want.DueMs, seq: want.Seq, id: want.Id},
		{tag: tagTask, shard: shard, id: want.Id},
	}
	if keys := rawKeys(t, s); !slices.Equal(keys, wantKeys) {
		t.Fatalf("keys %+v\nwant %+v", keys, wantKeys)
	}
	if _, err := s.Task(want.Id + 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Task(absent) = %v, want ErrNotFound", err)
	}
}

func TestRecordRoundTrips(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	shard := GroupShardOf(DefaultShards, "acme", "orders")
	group := &storepb.Group{Shard: uint32(shard), Client: "acme", Group: "orders", Tasks: 10, BlockedTask: MakeID(shard, 3), BlockedSinceMs: 5}
	dead := &storepb.DeadLetter{Task: fullTask(), LastError: "gave up", Attempts: 5, FailedMs: 77, BlocksGroup: true}
	acme := &storepb.Client{
		Id: "acme", PasswordHash: []byte("argon2id$..."), Admin: true,
		Callback:    &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: "10.0.0.1:9000"},
		Retry:       &storepb.RetryPolicy{MaxAttempts: 3},
		DefaultMode: storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE, SigningSecret: []byte("s3cret"),
		CreatedMs: 1, DlqMaxEntries: 100, DlqRetentionMs: 3600_000,
	}
	commit(t, s, func(b *Batch) {
		b.PutGroup(group)
		b.PutDeadLetter(dead)
		b.PutIdempotency(shard, "acme", "order-17", dead.Task.Id, 1234)
		b.PutShardMeta(shard, shardMeta(42))
		b.PutClient(acme)
	})

	g, err := s.Group(shard, "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, g, group)
	d, err := s.DeadLetter(dead.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, d, dead)
	id, created, err := s.Idempotency(shard, "acme", "order-17")
	if err != nil || id != dead.Task.Id || created != 1234 {
		t.Fatalf("Idempotency = %#x, %d, %v; want %#x, 1234", id, created, err, dead.Task.Id)
	}
	m, err := s.ShardMeta(shard)
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, m, shardMeta(42))
	c, err := s.Client("acme")
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, c, acme)
	if n := len(rawKeysOf(t, s, tagDeadClient)); n != 1 {
		t.Fatalf("%d dead letter client index entries, want 1", n)
	}

	commit(t, s, func(b *Batch) {
		b.UnblockGroup(shard, "acme", "orders")
		b.DeleteGroup(shard, "acme", "orders")
		b.DeleteDeadLetter(dead)
		b.DeleteIdempotency(shard, "acme", "order-17", 1234)
		b.DeleteClient("acme")
	})
	for name, err := range map[string]error{
		"Group":       second(s.Group(shard, "acme", "orders")),
		"DeadLetter":  second(s.DeadLetter(dead.Task.Id)),
		"Idempotency": third(s.Idempotency(shard, "acme", "order-17")),
		"Client":      second(s.Client("acme")),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after delete: %v, want ErrNotFound", name, err)
		}
	}
	// Shard meta is never deleted; an unknown shard reads as zero.
	if m, err := s.ShardMeta(shard + 1); err != nil || m.LastId != 0 {
		t.Fatalf("ShardMeta(absent) = %v, %v; want zero value", m, err)
	}
	if keys := rawKeys(t, s); len(keys) != 1 || keys[0].tag != tagShardMeta {
		t.Fatalf("keys left: %+v, want only the shard meta", keys)
	}
}

func second[T any](_ T, err error) error { return err }

func TestReplaceTaskMovesIndexEntries(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	old := task("acme", "orders", 1, 1000)
	shard := ShardOf(old.Id)
	commit(t, s, func(b *Batch) { b.PutTask(old) })

	// A change that keeps the due time leaves the index alone.
	attempted := cloneTask(old)
	attempted.Attempts = 1
	commit(t, s, func(b *Batch) { b.ReplaceTask(old, attempted) })
	assertDue(t, s, shard, []int64{1000})

	// A new due time moves the due index entry.
	moved := cloneTask(attempted)
	moved.DueMs = 5000
	commit(t, s, func(b *Batch) { b.ReplaceTask(attempted, moved) })
	assertDue(t, s, shard, []int64{5000})
	got, err := s.Task(old.Id)
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, got, moved)

	// A new client moves the client index entry.
	renamed := cloneTask(moved)
	renamed.Client = "acme-2"
	commit(t, s, func(b *Batch) { b.ReplaceTask(moved, renamed) })
	idx := rawKeysOf(t, s, tagClientIndex)
	if len(idx) != 1 || idx[0].a != "acme-2" {
		t.Fatalf("client index %+v, want one entry of acme-2", idx)
	}
	if tasks, _, err := s.ListTasks(TaskQuery{Client: "acme"}); err != nil || len(tasks) != 0 {
		t.Fatalf("old client still lists %d tasks (%v)", len(tasks), err)
	}
	if n := len(rawKeys(t, s)); n != 4 {
		t.Fatalf("%d keys, want 4 (record, due, group order, client index)", n)
	}
}

func assertDue(t *testing.T, s *Store, shard uint16, want []int64) {
	t.Helper()
	var got []int64
	if err := s.ScanDue(shard, minDue, maxDue, func(e DueEntry) error {
		got = append(got, e.Due)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("due index %v, want %v", got, want)
	}
}

func cloneTask(t *storepb.Task) *storepb.Task { return proto.Clone(t).(*storepb.Task) }

// Bounds that cover every due time ScanDue can return.
const (
	minDue = math.MinInt64
	maxDue = math.MaxInt64
)

// TestDeleteLeavesNothingBehind fills every key space, deletes every
// record, and checks the raw key spaces are empty but for the schema.
func TestDeleteLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	var tasks []*storepb.Task
	for i := range uint64(50) {
		tasks = append(tasks, task("client-"+string(rune('a'+i%3)), "group-"+string(rune('a'+i%7)), i+1, int64(i)-25))
	}
	commit(t, s, func(b *Batch) {
		for _, tk := range tasks {
			b.PutTask(tk)
			b.PutDeadLetter(&storepb.DeadLetter{Task: tk})
			b.PutIdempotency(ShardOf(tk.Id), tk.Client, "key", tk.Id, int64(tk.Id))
			b.PutGroup(&storepb.Group{Shard: uint32(ShardOf(tk.Id)), Client: tk.Client, Group: tk.Group})
		}
		b.PutClient(client("client-a"))
	})
	if len(rawKeys(t, s)) == 0 {
		t.Fatal("nothing written")
	}
	commit(t, s, func(b *Batch) {
		for _, tk := range tasks {
			b.DeleteTask(tk)
			b.DeleteDeadLetter(&storepb.DeadLetter{Task: tk})
			b.DeleteIdempotency(ShardOf(tk.Id), tk.Client, "key", int64(tk.Id))
			b.DeleteGroup(ShardOf(tk.Id), tk.Client, tk.Group)
		}
		b.DeleteClient("client-a")
	})
	if keys := rawKeys(t, s); len(keys) != 0 {
		t.Fatalf("%d keys left behind, first %+v", len(keys), keys[0])
	}
}

// An operation the store refuses adds nothing and says why; the batch's
// other operations, before and after it, are committed.
func TestBatchRefusesInvalidOperations(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	good := task("acme", "orders", 1, 1000)
	cases := map[string]func(*Batch) error{
		"task id 0":         func(b *Batch) error { return b.PutTask(&storepb.Task{Client: "acme"}) },
		"nil task":          func(b *Batch) error { return b.DeleteTask(nil) },
		"shard out of id":   func(b *Batch) error { return b.PutTask(&storepb.Task{Id: uint64(DefaultShards) << idCounterBits}) },
		"replace other id":  func(b *Batch) error { return b.ReplaceTask(good, task("acme", "orders", 2, 1000)) },
		"group shard":       func(b *Batch) error { return b.PutGroup(&storepb.Group{Shard: DefaultShards}) },
		"delete group":      func(b *Batch) error { return b.DeleteGroup(DefaultShards, "a", "b") },
		"dead letter":       func(b *Batch) error { return b.PutDeadLetter(&storepb.DeadLetter{}) },
		"idempotency id 0":  func(b *Batch) error { return b.PutIdempotency(1, "acme", "k", 0, 0) },
		"shard meta nil":    func(b *Batch) error { return b.PutShardMeta(1, nil) },
		"client without id": func(b *Batch) error { return b.PutClient(&storepb.Client{}) },
		"invalid UTF-8 client": func(b *Batch) error {
			return b.PutClient(&storepb.Client{Id: "acme", Admin: true, Callback: &storepb.Callback{Endpoint: "\xff"}})
		},
		"invalid UTF-8 task": func(b *Batch) error {
			bad := task("acme", "orders", 3, 1000)
			bad.LastError = "cut in the middle of \xe2\x82"
			return b.PutTask(bad)
		},
	}
	for name, bad := range cases {
		commit(t, s, func(b *Batch) {
			if err := b.PutTask(good); err != nil {
				t.Fatal(err)
			}
			if err := bad(b); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
			if err := b.PutClient(client("after")); err != nil {
				t.Fatal(err)
			}
			if b.Count() != 2 {
				t.Errorf("%s: batch counts %d operations, want 2", name, b.Count())
			}
		})
		if _, err := s.Task(good.Id); err != nil {
			t.Errorf("%s: the valid task before it: %v", name, err)
		}
		if _, err := s.Client("after"); err != nil {
			t.Errorf("%s: the valid client after it: %v", name, err)
		}
		if _, err := s.Task(MakeID(GroupShardOf(DefaultShards, "acme", "orders"), 3)); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: the refused task is there: %v", name, err)
		}
	}
}

func TestBatchCountResetAndReuse(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	b := s.NewBatch()
	if err := s.Commit(b); err != nil {
		t.Fatalf("empty Commit = %v, want nil", err)
	}
	if st := s.Stats(); st.Commits != 0 {
		t.Fatalf("an empty commit counted: %+v", st)
	}
	b.PutTask(task("a", "g", 1, 1))
	b.PutShardMeta(3, shardMeta(1))
	if b.Count() != 2 {
		t.Fatalf("Count = %d, want 2", b.Count())
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err == nil || !strings.Contains(err.Error(), "Reset") {
		t.Fatalf("second Commit of one batch = %v, want an error asking for Reset", err)
	}
	b.Reset()
	if b.Count() != 0 {
		t.Fatalf("Count after Reset = %d", b.Count())
	}
	b.PutTask(task("a", "g", 2, 2))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.PutTask(&storepb.Task{})
	b.Reset() // forgets the invalid operation
	b.PutTask(task("a", "g", 3, 3))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if n := len(rawKeysOf(t, s, tagTask)); n != 3 {
		t.Fatalf("%d tasks, want 3", n)
	}
	if st := s.Stats(); st.Commits != 3 || st.CommitOps != 4 {
		t.Fatalf("Stats %+v, want 3 commits of 4 operations", st)
	}

	other := openStore(t, t.TempDir())
	ob := other.NewBatch()
	ob.PutClient(client("x"))
	if err := s.Commit(ob); err == nil {
		t.Fatal("Commit of another store's batch succeeded")
	}
}

// TestBatchAtomicAcrossReopen: a committed multi-record batch is all there
// after a reopen.
func TestBatchAtomicAcrossReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tk := task("acme", "orders", 7, 100)
	shard := ShardOf(tk.Id)
	commit(t, s, func(b *Batch) {
		b.PutTask(tk)
		b.PutGroup(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: "orders", Tasks: 1})
		b.PutIdempotency(shard, "acme", "k7", tk.Id, 7)
		b.PutShardMeta(shard, shardMeta(7))
	})
	want := rawKeys(t, s)
	closeStore(t, s)
	s = openStore(t, dir)
	if got := rawKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("after reopen %+v\nwant %+v", got, want)
	}
}

// TestDeadLettersOfOneRecurringTask: dead letters with their own ids keep
// one entry per failed occurrence of a task.
func TestDeadLettersOfOneRecurringTask(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	tk := task("acme", "tick", 1, 0)
	tk.IntervalMs = 1000
	shard := ShardOf(tk.Id)
	earlier := &storepb.DeadLetter{Id: MakeID(shard, 2), Task: tk, LastError: "earlier"}
	later := &storepb.DeadLetter{Id: MakeID(shard, 3), Task: tk, LastError: "later"}
	commit(t, s, func(b *Batch) {
		b.PutDeadLetter(earlier)
		b.PutDeadLetter(later)
	})
	for _, want := range []*storepb.DeadLetter{earlier, later} {
		got, err := s.DeadLetter(want.Id)
		if err != nil {
			t.Fatal(err)
		}
		assertProtoEqual(t, got, want)
	}
	if _, err := s.DeadLetter(tk.Id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeadLetter(task id) = %v, want ErrNotFound: dead letters with ids are keyed by them", err)
	}
	dls, _, err := s.ListDeadLetters("acme", 0, 0)
	if err != nil || len(dls) != 2 || dls[0].Id != earlier.Id || dls[1].Id != later.Id {
		t.Fatalf("ListDeadLetters = %v, %v; want both occurrences in id order", dls, err)
	}
	commit(t, s, func(b *Batch) { b.DeleteDeadLetter(earlier) })
	if dls, _, _ := s.ListDeadLetters("", 0, 0); len(dls) != 1 || dls[0].Id != later.Id {
		t.Fatalf("after deleting the earlier one: %v", dls)
	}

	b := s.NewBatch()
	if err := b.PutDeadLetter(&storepb.DeadLetter{Id: MakeID((shard+1)%DefaultShards, 9), Task: tk}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("dead letter outside its task's shard: %v, want ErrInvalid", err)
	}
}

// TestCommitNoSync: an unsynced commit is visible at once, does not wait
// for or count as a synced commit, and a later synced commit makes it
// durable with itself.
func TestCommitNoSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	unsynced, synced := task("acme", "g", 1, 100), task("acme", "g", 2, 200)
	b := s.NewBatch()
	b.PutTask(unsynced)
	if err := s.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Task(unsynced.Id); err != nil || got == nil {
		t.Fatalf("Task after CommitNoSync = %v, %v", got, err)
	}
	if st := s.Stats(); st.Commits != 1 || st.SyncedCommits != 0 {
		t.Fatalf("Stats %+v, want 1 commit, none synced", st)
	}
	commit(t, s, func(b *Batch) { b.PutTask(synced) })
	if st := s.Stats(); st.Commits != 2 || st.SyncedCommits != 1 {
		t.Fatalf("Stats %+v, want 2 commits, 1 synced", st)
	}
	want := rawKeys(t, s)
	closeStore(t, s)
	s = openStore(t, dir)
	if got := rawKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("after reopen %+v\nwant %+v", got, want)
	}
}

// TestTasksReadsManyInOrder: Tasks returns every stored task of a sorted
// id list, across shards, and nil for the ids without one.
func TestTasksReadsManyInOrder(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	var ids []uint64
	stored := map[uint64]bool{}
	commit(t, s, func(b *Batch) {
		for i := range 300 {
			tk := task("acme", "", uint64(i+1), 100)
			tk.Id = MakeID(uint16(i%7*(DefaultShards/8)), uint64(i+1))
			ids = append(ids, tk.Id)
			if i%3 != 0 { // every third id has no task
				b.PutTask(tk)
				stored[tk.Id] = true
			}
		}
	})
	slices.Sort(ids)
	var got []uint64
	err := s.Tasks(ids, func(id uint64, tk *storepb.Task) {
		got = append(got, id)
		switch {
		case stored[id] && (tk == nil || tk.Id != id):
			t.Errorf("task %#x: got %v", id, tk)
		case !stored[id] && tk != nil:
			t.Errorf("task %#x was never stored, got %v", id, tk)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("Tasks passed %d ids, want the %d asked for, in order", len(got), len(ids))
	}
	if err := s.Tasks([]uint64{ids[1], ids[0]}, func(uint64, *storepb.Task) {}); err == nil {
		t.Fatal("Tasks accepted descending ids")
	}
	if err := s.Tasks(nil, func(uint64, *storepb.Task) { t.Fatal("called for no ids") }); err != nil {
		t.Fatal(err)
	}
}

// TestCommitAsync: a batch is in the log when CommitAsync returns and
// synced when its wait returns; an empty batch and a bad one cost nothing.
func TestCommitAsync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	var waits []func() error
	for i := range 3 {
		b := s.NewBatch()
		b.PutTask(task("acme", "g", uint64(i+1), 100))
		wait, err := s.CommitAsync(b)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
	}
	for _, wait := range waits {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Commits != 3 || st.SyncedCommits != 3 {
		t.Fatalf("Stats %+v, want 3 synced commits", st)
	}
	if wait, err := s.CommitAsync(s.NewBatch()); err != nil || wait() != nil {
		t.Fatalf("CommitAsync of an empty batch: %v", err)
	}
	other := openStore(t, t.TempDir())
	ob := other.NewBatch()
	ob.PutClient(client("x"))
	if _, err := s.CommitAsync(ob); err == nil {
		t.Fatal("CommitAsync of another store's batch succeeded")
	}
	want := rawKeys(t, s)
	closeStore(t, s)
	s = openStore(t, dir)
	if got := rawKeys(t, s); !slices.Equal(got, want) || len(got) == 0 {
		t.Fatalf("after reopen %+v\nwant %+v", got, want)
	}
}

package store

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// walFault fails WAL operations of the given kinds while armed.
func walFault(armed *atomic.Bool, kinds ...errorfs.OpKind) errorfs.Injector {
	return errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !armed.Load() || !isWAL(op.Path) {
			return nil
		}
		for _, k := range kinds {
			if op.Kind == k {
				return errorfs.ErrInjected
			}
		}
		return nil
	})
}

func openFaulty(t *testing.T, dir string, inj errorfs.Injector) *Store {
	t.Helper()
	s, err := open(dir, Options{}, errorfs.Wrap(vfs.Default, inj))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFsyncFailure: a failed WAL fsync fails the commit, and the store
// refuses everything afterwards instead of serving state the disk may not
// have. Acknowledged commits survive a reopen.
func TestFsyncFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var armed atomic.Bool
	s := openFaulty(t, dir, walFault(&armed, errorfs.OpFileSync, errorfs.OpFileSyncData))
	acked := task("acme", "orders", 1, 10)
	commit(t, s, func(b *Batch) { b.PutTask(acked) })

	armed.Store(true)
	b := s.NewBatch()
	b.PutTask(task("acme", "orders", 2, 20))
	err := s.Commit(b)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Commit with a failing fsync = %v, want ErrFailed naming the injected error", err)
	}
	if _, err := s.Task(acked.Id); !errors.Is(err, ErrFailed) {
		t.Errorf("read after the failure = %v, want ErrFailed", err)
	}
	b.Reset()
	b.PutClient(client("x"))
	if err := s.Commit(b); !errors.Is(err, ErrFailed) {
		t.Errorf("Commit after the failure = %v, want ErrFailed", err)
	}
	_ = s.Close() // may report the WAL error; must not panic or hang

	s = openStore(t, dir)
	got, err := s.Task(acked.Id)
	if err != nil {
		t.Fatalf("acknowledged task lost: %v", err)
	}
	assertProtoEqual(t, got, acked)
}

// TestFsyncFailureConcurrent: every committer waiting on the failed fsync
// gets an error; none is told its batch is durable.
func TestFsyncFailureConcurrent(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	s := openFaulty(t, t.TempDir(), walFault(&armed, errorfs.OpFileSync, errorfs.OpFileSyncData))
	armed.Store(true)
	var wg sync.WaitGroup
	var succeeded atomic.Int32
	for i := range 16 {
		wg.Go(func() {
			b := s.NewBatch()
			b.PutTask(task("c", "g", uint64(i+1), 0))
			if err := s.Commit(b); err == nil {
				succeeded.Add(1)
			} else if !errors.Is(err, ErrFailed) {
				t.Errorf("Commit = %v, want ErrFailed", err)
			}
		})
	}
	wg.Wait()
	if n := succeeded.Load(); n != 0 {
		t.Fatalf("%d commits reported success with every fsync failing", n)
	}
	_ = s.Close()
}

// TestWriteFailureIsAtomic: a batch whose WAL write fails is not applied,
// in whole or in part, after a reopen.
func TestWriteFailureIsAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var armed atomic.Bool
	s := openFaulty(t, dir, walFault(&armed, errorfs.OpFileWrite, errorfs.OpFileWriteAt))
	commit(t, s, func(b *Batch) { b.PutClient(client("before")) })

	tk := task("acme", "orders", 1, 10)
	shard := ShardOf(tk.Id)
	armed.Store(true)
	b := s.NewBatch()
	b.PutTask(tk)
	b.PutGroup(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: "orders", Tasks: 1})
	b.PutShardMeta(shard, shardMeta(1))
	b.PutClient(client("during"))
	if err := s.Commit(b); !errors.Is(err, ErrFailed) {
		t.Fatalf("Commit with a failing WAL write = %v, want ErrFailed", err)
	}
	_ = s.Close()

	s = openStore(t, dir)
	if _, err := s.Client("before"); err != nil {
		t.Fatalf("acknowledged client lost: %v", err)
	}
	present := map[string]bool{}
	present["task"] = second(s.Task(tk.Id)) == nil
	present["group"] = second(s.Group(shard, "acme", "orders")) == nil
	present["client"] = second(s.Client("during")) == nil
	m, err := s.ShardMeta(shard)
	if err != nil {
		t.Fatal(err)
	}
	present["meta"] = m.LastId == 1
	present["due index"] = len(rawKeysOf(t, s, tagDue)) == 1
	// The failed write put nothing of the batch in the WAL, so none of
	// it may come back, and certainly not a part.
	for what, there := range present {
		if there {
			t.Fatalf("%s of a batch whose WAL write failed was recovered: %v", what, present)
		}
	}
}

// TestFsyncFailureAsync: with CommitAsync a failed WAL fsync surfaces in
// wait, as ErrFailed, and fails the store.
func TestFsyncFailureAsync(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	s := openFaulty(t, t.TempDir(), walFault(&armed, errorfs.OpFileSync, errorfs.OpFileSyncData))
	armed.Store(true)
	b := s.NewBatch()
	b.PutTask(task("acme", "orders", 1, 10))
	wait, err := s.CommitAsync(b)
	if err == nil {
		err = wait()
	}
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("CommitAsync with a failing fsync = %v, want ErrFailed naming the injected error", err)
	}
	if _, err := s.Task(1); !errors.Is(err, ErrFailed) {
		t.Errorf("read after the failure = %v, want ErrFailed", err)
	}
	_ = s.Close()
}

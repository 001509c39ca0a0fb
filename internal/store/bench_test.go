package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// BenchmarkCommit measures synced commits of one task change each (a task
// with a 256-byte payload, its group and its shard meta) from 1 to 256
// concurrent committers. Read commits/s against BenchmarkFsync from the
// same run: one committer is bound by the disk's fsync rate, many share
// each fsync (commits/fsync).
func BenchmarkCommit(b *testing.B) {
	for _, committers := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			benchCommit(b, committers)
		})
	}
}

func benchCommit(b *testing.B, committers int) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	payload := make([]byte, 256)
	var next atomic.Int64
	var wg sync.WaitGroup
	before := s.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	begin := time.Now()
	for c := range committers {
		wg.Go(func() {
			client, group := "client", fmt.Sprintf("group-%d", c)
			shard := GroupShardOf(DefaultShards, client, group)
			batch := s.NewBatch()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				id := MakeID(shard, uint64(n))
				batch.Reset()
				batch.PutTask(&storepb.Task{Id: id, Client: client, Group: group, Payload: payload, DueMs: n, Seq: uint64(n)})
				batch.PutGroup(&storepb.Group{Shard: uint32(shard), Client: client, Group: group, Tasks: uint64(n + 1)})
				batch.PutShardMeta(shard, &storepb.ShardMeta{LastId: uint64(n)})
				if err := s.Commit(batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	b.StopTimer()
	st := s.Stats()
	commits := float64(st.Commits - before.Commits)
	syncs := float64(st.WALSyncs - before.WALSyncs)
	b.ReportMetric(commits/elapsed.Seconds(), "commits/s")
	b.ReportMetric(syncs/elapsed.Seconds(), "fsyncs/s")
	b.ReportMetric(commits/syncs, "commits/fsync")
}

// BenchmarkFsync is the disk's raw fsync rate: append 4 KiB to a file in
// the benchmark's temp dir and fsync it, as a WAL does for one commit.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	begin := time.Now()
	n := 0
	for b.Loop() {
		if _, err := f.Write(block); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(begin).Seconds(), "fsyncs/s")
}

// BenchmarkScanDue scans a shard's due index of 1,000,000 entries, from
// sstables, as recovery and the look-ahead loader do.
func BenchmarkScanDue(b *testing.B) {
	const entries = 1_000_000
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const shard = 7
	fillDueIndex(b, s, shard, entries)
	var n int
	begin := time.Now()
	for b.Loop() {
		n = 0
		if err := s.ScanDue(shard, minDue, maxDue, func(DueEntry) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != entries {
			b.Fatalf("scanned %d entries, want %d", n, entries)
		}
	}
	b.ReportMetric(float64(entries*b.N)/time.Since(begin).Seconds(), "records/s")
}

// fillDueIndex writes due index entries only, unsynced, then flushes and
// compacts them into sstables: the benchmark reads, it does not commit.
func fillDueIndex(b *testing.B, s *Store, shard uint16, entries int) {
	b.Helper()
	const perBatch = 10_000
	for start := 0; start < entries; start += perBatch {
		pb := s.db.NewBatch()
		for i := start; i < min(start+perBatch, entries); i++ {
			due := int64(1_700_000_000_000 + i/4) // four tasks share each due time
			if err := pb.Set(dueKey(due, MakeID(shard, uint64(i+1))), nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := pb.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.db.Compact(b.Context(), []byte{tagDue}, []byte{tagDue + 1}, true); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStats checks that Stats is cheap enough for every scrape.
func BenchmarkStats(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		_ = s.Stats()
	}
}

// BenchmarkReadTasks reads 200,000 tasks (64-byte payloads, flushed to an
// sstable) in id order, as the scheduler reads the tasks that fire
// together: one Task call each (the baseline) against one Tasks call.
func BenchmarkReadTasks(b *testing.B) {
	s := openStore(b, b.TempDir())
	const n = 200_000
	ids := make([]uint64, 0, n)
	for start := 0; start < n; start += 10_000 {
		bt := s.NewBatch()
		for i := start; i < start+10_000; i++ {
			tk := task("acme", "", uint64(i+1), 100)
			tk.Id = MakeID(uint16(i%DefaultShards), uint64(i/DefaultShards+1))
			tk.Payload = make([]byte, 64)
			bt.PutTask(tk)
			ids = append(ids, tk.Id)
		}
		if err := s.Commit(bt); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(ids)
	b.Run("Task", func(b *testing.B) {
		for i := range b.N {
			if _, err := s.Task(ids[i%n]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Tasks", func(b *testing.B) {
		for done := 0; done < b.N; done += n {
			err := s.Tasks(ids[:min(n, b.N-done)], func(id uint64, t *storepb.Task) {
				if t == nil {
					b.Fatalf("task %#x missing", id)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGroupHead measures finding a busy group's head: each op ends
// the head task and adds one at the tail, as a group that runs its tasks
// one after another does, then asks for the head. Every ended task leaves
// a deletion in the group's order until a flush or compaction; "scan"
// (the baseline) steps over all of them from the start of the order,
// "floor" starts at the last head found.
func BenchmarkGroupHead(b *testing.B) {
	for _, name := range []string{"scan", "floor"} {
		b.Run(name, func(b *testing.B) { benchGroupHead(b, groupHeads[name]) })
	}
}

// BenchmarkGroupHeadAgain measures asking for a group's head again with
// no change in between, as the scheduler does when a group waits for a
// delivery slot: "floor" answers from memory, "scan" (the baseline) reads
// the store.
func BenchmarkGroupHeadAgain(b *testing.B) {
	for _, name := range []string{"scan", "floor"} {
		b.Run(name, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			shard := GroupShardOf(DefaultShards, "client", "group")
			batch := s.NewBatch()
			for n := range uint64(8) {
				batch.PutTask(&storepb.Task{Id: MakeID(shard, n+1), Client: "client", Group: "group", DueMs: 1, Seq: n + 1})
			}
			if err := s.CommitNoSync(batch); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if e, ok, err := groupHeads[name](s); err != nil || !ok || e.Seq != 1 {
					b.Fatalf("head %+v, %v, %v; want seq 1", e, ok, err)
				}
			}
		})
	}
}

// groupHeads are the two ways of finding a group's head.
var groupHeads = map[string]func(s *Store) (OrderEntry, bool, error){
	"floor": func(s *Store) (OrderEntry, bool, error) { return s.GroupHead("client", "group") },
	"scan": func(s *Store) (e OrderEntry, ok bool, err error) {
		err = s.GroupOrder("client", "group", func(first OrderEntry) bool { e, ok = first, true; return false })
		return e, ok, err
	},
}

func benchGroupHead(b *testing.B, head func(*Store) (OrderEntry, bool, error)) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const waiting = 8
	shard := GroupShardOf(DefaultShards, "client", "group")
	task := func(n uint64) *storepb.Task {
		return &storepb.Task{Id: MakeID(shard, n), Client: "client", Group: "group", DueMs: 1, Seq: n}
	}
	batch := s.NewBatch()
	for n := range uint64(waiting) {
		batch.PutTask(task(n + 1))
	}
	if err := s.CommitNoSync(batch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range uint64(b.N) {
		batch.Reset()
		batch.DeleteTask(task(i + 1))
		batch.PutTask(task(i + 1 + waiting))
		if err := s.CommitNoSync(batch); err != nil {
			b.Fatal(err)
		}
		if e, ok, err := head(s); err != nil || !ok || e.Seq != i+2 {
			b.Fatalf("head %+v, %v, %v; want seq %d", e, ok, err, i+2)
		}
	}
}

// BenchmarkIdempotencyMiss looks up idempotency keys the store does not
// hold (a registration's usual case) in a store of 200,000 keys, half in
// sstables, half in the memtable: "pebble" is the read Idempotency made
// before the store kept its keys' hashes (the baseline), "set" is
// Idempotency now.
func BenchmarkIdempotencyMiss(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const held = 200_000
	for i := range held {
		if i == held/2 {
			if err := s.db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		sh := uint16(i % DefaultShards)
		batch := s.NewBatch()
		if err := batch.PutIdempotency(sh, "client", fmt.Sprint("held-", i), MakeID(sh, uint64(i+1)), int64(i)); err != nil {
			b.Fatal(err)
		}
		if err := s.CommitNoSync(batch); err != nil {
			b.Fatal(err)
		}
	}
	lookup := map[string]func(sh uint16, key string) error{
		"pebble": func(sh uint16, key string) error {
			return get(s.db, key, idempotencyKey(sh, "client", key), func([]byte) error { return nil })
		},
		"set": func(sh uint16, key string) error {
			_, _, err := s.Idempotency(sh, "client", key)
			return err
		},
	}
	for _, name := range []string{"pebble", "set"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				if err := lookup[name](uint16(i%DefaultShards), fmt.Sprint("new-", i)); !errors.Is(err, ErrNotFound) {
					b.Fatal(err)
				}
			}
		})
	}
}

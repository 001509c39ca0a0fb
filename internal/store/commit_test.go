package store

import (
	"sync"
	"testing"
)

// TestConcurrentCommitsShareFsyncs: many goroutines committing at once are
// covered by far fewer WAL fsyncs than commits. It counts fsyncs where they
// happen (the filesystem under Pebble), so it tests sharing, not speed.
func TestConcurrentCommitsShareFsyncs(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	const (
		committers = 64
		each       = 40
	)
	before := s.Stats()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range committers {
		wg.Go(func() {
			b := s.NewBatch()
			<-start
			for i := range each {
				b.Reset()
				tk := task("client", "group", uint64(g*each+i+1), int64(i))
				b.PutTask(tk)
				b.PutShardMeta(ShardOf(tk.Id), shardMeta(uint64(i)))
				if err := s.Commit(b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()

	st := s.Stats()
	commits := st.Commits - before.Commits
	syncs := st.WALSyncs - before.WALSyncs
	t.Logf("%d commits, %d WAL fsyncs: %.1f commits per fsync", commits, syncs, float64(commits)/float64(syncs))
	if commits != committers*each {
		t.Fatalf("%d commits counted, want %d", commits, committers*each)
	}
	if syncs == 0 {
		t.Fatal("no WAL fsync counted: commits were not synced, or the counter is broken")
	}
	// How many commits an fsync covers depends on how long it takes: on
	// a fast disk an fsync often ends before the next commit arrives
	// (1.3 - 2 commits per fsync here, on an idle machine), on a slow one
	// it covers dozens. Unshared, each commit would have its own
	// (TestSequentialCommitsSyncEach).
	if syncs >= commits*9/10 {
		t.Fatalf("%d WAL fsyncs for %d concurrent commits: fsyncs are not shared", syncs, commits)
	}
	if n := len(rawKeysOf(t, s, tagTask)); n != committers*each {
		t.Fatalf("%d tasks stored, want %d", n, committers*each)
	}
}

// TestSequentialCommitsSyncEach is the control: one committer waits for
// each fsync, so every commit costs one. It proves the counter sees WAL
// fsyncs and that Commit really syncs.
func TestSequentialCommitsSyncEach(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	before := s.Stats()
	const n = 50
	for i := range uint64(n) {
		commit(t, s, func(b *Batch) { b.PutTask(task("c", "g", i+1, 0)) })
	}
	st := s.Stats()
	if syncs := st.WALSyncs - before.WALSyncs; syncs < n {
		t.Fatalf("%d WAL fsyncs for %d sequential commits, want at least one each", syncs, n)
	}
	if st.WALBytes <= before.WALBytes || st.DiskBytes == 0 || st.Syncs < st.WALSyncs {
		t.Fatalf("implausible stats %+v", st)
	}
}

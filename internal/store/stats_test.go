package store

import (
	"context"
	"testing"
)

// TestStatsCountFlushedAndCompactedBytes checks the write amplification
// counters: a flush adds to FlushedBytes only, a compaction to
// CompactedBytes only.
func TestStatsCountFlushedAndCompactedBytes(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Options{manualCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	for round := range 2 {
		commit(t, s, func(b *Batch) {
			for n := range 100 {
				b.PutTask(task("acme", "", uint64(round*100+n+1), 1000))
			}
		})
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	flushed := s.Stats()
	if flushed.FlushedBytes == 0 || flushed.CompactedBytes != 0 {
		t.Fatalf("after two flushes: flushed %d, compacted %d bytes; want some, none", flushed.FlushedBytes, flushed.CompactedBytes)
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	compacted := s.Stats()
	if compacted.CompactedBytes == 0 || compacted.FlushedBytes != flushed.FlushedBytes {
		t.Fatalf("after a compaction: flushed %d (was %d), compacted %d bytes; want the same, some",
			compacted.FlushedBytes, flushed.FlushedBytes, compacted.CompactedBytes)
	}
}

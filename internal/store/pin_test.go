package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/boomerangd/boomerang/internal/testwait"
)

// pinLo and pinHi bound the keys of the pinner's tests, outside every
// key space of the store.
var pinLo, pinHi = []byte("\xfepin/"), []byte("\xfepin0")

// cachedThenCompacted opens a store whose pinner holds a replaced read
// state for overlap (0: the default), with compactions left to the test;
// writes two overlapping tables, reads them into the block cache, opens an
// iterator as a caller's read would, and compacts the tables into a new
// one: once the last reader of the old state lets go, the old tables'
// blocks are evicted. It returns the store, the open iterator and the
// number of blocks cached before the compaction.
func cachedThenCompacted(t *testing.T, overlap time.Duration) (*Store, *pebble.Iterator, int64) {
	t.Helper()
	s, err := Open(t.TempDir(), Options{pinOverlap: overlap, manualCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore(t, s) })
	value := bytes.Repeat([]byte{'v'}, 1000)
	for range 2 {
		for i := range 2000 {
			if err := s.db.Set(fmt.Appendf(nil, "%s%05d", pinLo, i), value, pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	scan := func() *pebble.Iterator {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pinLo, UpperBound: pinHi})
		if err != nil {
			t.Fatal(err)
		}
		for it.First(); it.Valid(); it.Next() {
		}
		return it
	}
	if err := scan().Close(); err != nil {
		t.Fatal(err)
	}
	cached := s.db.Metrics().BlockCache.Count
	if cached == 0 {
		t.Fatal("reading the tables cached no block")
	}
	it := scan()
	if err := s.db.Compact(context.Background(), pinLo, pinHi, false); err != nil {
		t.Fatal(err)
	}
	return s, it, cached
}

// TestReaderDoesNotEvictTheTablesItOutlived closes the last caller's
// iterator on a read state a compaction replaced: the blocks of the
// tables it made obsolete must still be cached after Close returns, their
// eviction left to the pinner, which here holds the old state for an hour.
// Without the pinner Close evicts them itself, yielding the processor
// after every five blocks.
func TestReaderDoesNotEvictTheTablesItOutlived(t *testing.T) {
	t.Parallel()
	s, it, cached := cachedThenCompacted(t, time.Hour)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if after := s.db.Metrics().BlockCache.Count; after < cached {
		t.Fatalf("the block cache held %d blocks after the caller's Close, %d before: the caller evicted the old tables", after, cached)
	}
}

// TestPinnerLetsGoOfOldTables checks the other half: with the default
// overlap the pinner releases the replaced state soon, and the old
// tables' blocks leave the cache.
func TestPinnerLetsGoOfOldTables(t *testing.T) {
	t.Parallel()
	s, it, cached := cachedThenCompacted(t, 0)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the old tables' blocks to leave the cache", func() bool {
		return s.db.Metrics().BlockCache.Count < cached
	})
}

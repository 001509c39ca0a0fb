package store

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// simplify leaves out of a state batch the writes Pebble need not see.
// Each case is a key's writes in order (s: set, d: delete, 1: single
// delete), and what reaches Pebble.
func TestSimplifyHeldWrites(t *testing.T) {
	for in, want := range map[string]string{
		"s":    "s",
		"s1":   "",   // put and single-deleted within the batch: nothing
		"ss":   "s",  // the second write replaces the first
		"sd":   "d",  // as does a deletion
		"ds":   "s",  // and a write a deletion
		"1s":   "1s", // a single deletion meets the write below
		"1s1":  "1",  // the write and the single deletion after it cancel
		"s1s":  "s",  // a task put, deleted, its key put again
		"s1s1": "",   // twice
		"d1":   "d1", // a single deletion is kept unless it cancels a write
		"ds1":  "d",  //
		"1ss":  "1s", // the write after a single deletion may be replaced
		"s11":  "1",  // (a second single deletion breaks the contract; kept)
		"sss1": "",   // the last write replaces the others, then cancels
		"1d":   "1d", // a single deletion is never replaced
		"dd":   "d",  //
		"":     "",   //
	} {
		var s stateWrites
		for _, c := range in {
			s.hold(map[rune]writeKind{'s': writeSet, 'd': writeDelete, '1': writeSingleDelete}[c], []byte("k"), nil)
		}
		// Another key's writes around them are untouched.
		s.hold(writeSet, []byte("j"), nil)
		var got strings.Builder
		for _, w := range simplify(s.writes, func(w heldWrite) []byte { return s.arena[w.start:w.mid] }) {
			if s.arena[w.start] == 'j' {
				continue
			}
			got.WriteByte(map[writeKind]byte{writeSet: 's', writeDelete: 'd', writeSingleDelete: '1'}[w.kind])
		}
		if got.String() != want {
			t.Errorf("%q: %q reach Pebble, want %q", in, got.String(), want)
		}
	}
}

// sort orders held writes by key, those of one key as they were made,
// whatever their key spaces, shards and lengths.
func TestSortOrdersHeldWrites(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var s stateWrites
		for range rapid.IntRange(0, 300).Draw(rt, "writes") {
			k := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, 2, 't', 0xff}), 0, 5).Draw(rt, "key")
			s.hold(writeSet, k, nil)
		}
		want := slices.Clone(s.writes)
		key := func(w heldWrite) []byte { return s.arena[w.start:w.mid] }
		slices.SortStableFunc(want, func(a, b heldWrite) int { return bytes.Compare(key(a), key(b)) })
		s.sort(key)
		if !slices.Equal(s.writes, want) {
			rt.Fatalf("sorted %d writes out of order", len(want))
		}
	})
}

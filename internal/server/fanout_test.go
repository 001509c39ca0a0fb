package server

import (
	"slices"
	"testing"
)

// Merged pages keep each node's items of the shards it reads, and end
// where the first node with more stopped, so no id is skipped.
func TestMergePages(t *testing.T) {
	shardOf := func(id uint64) uint16 { return uint16(id / 100) }
	readerOf := func(shard uint16) uint64 { return map[uint16]uint64{0: 1, 1: 1, 2: 2}[shard] }
	pages := map[uint64][]uint64{
		1: {1, 2, 101, 201}, // a page cut after 201; shard 2 is node 2's
		2: {101, 201, 202, 203},
	}
	id := func(v uint64) uint64 { return v }
	for _, c := range []struct {
		name  string
		nexts map[uint64]uint64
		limit int
		want  []uint64
		next  uint64
	}{
		{"one node has more", map[uint64]uint64{1: 201}, 10, []uint64{1, 2, 101, 201}, 201},
		{"cut by the limit", map[uint64]uint64{1: 201}, 2, []uint64{1, 2}, 2},
		{"no node has more", map[uint64]uint64{}, 10, []uint64{1, 2, 101, 201, 202, 203}, 0},
		{"the lowest cut wins", map[uint64]uint64{1: 202, 2: 201}, 10, []uint64{1, 2, 101, 201}, 201},
	} {
		got, next := mergePages(pages, c.nexts, c.limit, readerOf, shardOf, id)
		if !slices.Equal(got, c.want) || next != c.next {
			t.Errorf("%s: got %v next %d, want %v next %d", c.name, got, next, c.want, c.next)
		}
	}
}

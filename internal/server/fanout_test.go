package server

import (
	"slices"
	"testing"
)

// Merged pages keep each node's items of the shards it reads, and end
// where the first node with more stopped, so no item is skipped; in id
// order and in due order.
func TestMergePages(t *testing.T) {
	shardOf := func(k pageKey) uint16 { return uint16(k.id / 100) }
	readerOf := func(shard uint16) uint64 { return map[uint16]uint64{0: 1, 1: 1, 2: 2}[shard] }
	key := func(k pageKey) pageKey { return k }
	ids := func(ids ...uint64) []pageKey {
		out := make([]pageKey, len(ids))
		for i, id := range ids {
			out[i] = pageKey{id: id}
		}
		return out
	}
	byID := map[uint64][]pageKey{
		1: ids(1, 2, 101, 201), // a page cut after 201; shard 2 is node 2's
		2: ids(101, 201, 202, 203),
	}
	byDue := map[uint64][]pageKey{
		1: {{5, 101}, {7, 1}, {9, 201}}, // cut after (9, 201)
		2: {{5, 101}, {6, 202}, {8, 201}, {8, 203}},
	}
	for _, c := range []struct {
		name  string
		pages map[uint64][]pageKey
		nexts map[uint64]pageKey
		limit int
		want  []pageKey
		next  pageKey
	}{
		{"one node has more", byID, map[uint64]pageKey{1: {id: 201}}, 10, ids(1, 2, 101, 201), pageKey{id: 201}},
		{"cut by the limit", byID, map[uint64]pageKey{1: {id: 201}}, 2, ids(1, 2), pageKey{id: 2}},
		{"no node has more", byID, map[uint64]pageKey{}, 10, ids(1, 2, 101, 201, 202, 203), pageKey{}},
		{"the lowest cut wins", byID, map[uint64]pageKey{1: {id: 202}, 2: {id: 201}}, 10, ids(1, 2, 101, 201), pageKey{id: 201}},
		{"due order, no more", byDue, nil, 10, []pageKey{{5, 101}, {6, 202}, {7, 1}, {8, 201}, {8, 203}}, pageKey{}},
		{"due order, a node has more", byDue, map[uint64]pageKey{2: {8, 201}}, 10, []pageKey{{5, 101}, {6, 202}, {7, 1}, {8, 201}}, pageKey{8, 201}},
		{"due order, cut by the limit", byDue, map[uint64]pageKey{1: {9, 201}}, 3, []pageKey{{5, 101}, {6, 202}, {7, 1}}, pageKey{7, 1}},
	} {
		got, next := mergePages(c.pages, c.nexts, c.limit, readerOf, shardOf, key)
		if !slices.Equal(got, c.want) || next != c.next {
			t.Errorf("%s: got %v next %v, want %v next %v", c.name, got, next, c.want, c.next)
		}
	}
}

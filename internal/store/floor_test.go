package store

import (
	"bytes"
	"testing"
)

// Floors follow an order's writes and deletions, and a head found by a
// scan that a write may have raced is not remembered: a write between
// get and raise, or a reset, voids the raise.
func TestFloorsFollowWritesAndRefuseARacedRaise(t *testing.T) {
	prefix := namedKey(tagOrder, 1, "acme", "g")
	key := func(due int64) []byte { return orderKey(1, "acme", "g", due, 1, MakeID(1, uint64(due))) }
	var f floors
	want := func(what string, k []byte, exact bool) {
		t.Helper()
		if fl, _ := f.get(prefix); !bytes.Equal(fl.key, k) || fl.exact != exact {
			t.Fatalf("%s: floor %x exact %v, want %x exact %v", what, fl.key, fl.exact, k, exact)
		}
	}

	want("a new floor", nil, false)
	_, gen := f.get(prefix)
	f.raise(prefix, key(50), gen)
	want("after a raise", key(50), true)

	f.written([]orderWrite{{key: key(60)}})
	want("after a write above the head", key(50), true)

	f.written([]orderWrite{{key: key(50), deleted: true}})
	want("after the head's deletion", key(50), false)

	_, gen = f.get(prefix)
	f.written([]orderWrite{{key: key(60), deleted: true}}) // between get and raise
	f.raise(prefix, key(70), gen)
	want("after a raced raise", key(50), false)

	f.written([]orderWrite{{key: key(10)}, {key: key(20)}})
	want("after writes below the floor", key(10), true)

	f.written([]orderWrite{{key: key(5)}, {key: key(5), deleted: true}})
	want("after a write and its deletion below the floor", key(5), false)

	_, gen = f.get(prefix)
	f.reset()
	f.raise(prefix, key(70), gen)
	want("after a reset and a stale raise", nil, false)
}

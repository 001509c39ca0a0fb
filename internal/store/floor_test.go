package store

import (
	"bytes"
	"testing"
)

// A head found by a scan that a write may have raced is not remembered:
// a write between get and raise, or a reset, voids the raise.
func TestFloorsRefuseARacedRaise(t *testing.T) {
	prefix := namedKey(tagOrder, 1, "acme", "g")
	key := func(due int64) []byte { return orderKey(1, "acme", "g", due, 1, MakeID(1, uint64(due))) }
	var f floors

	from, gen := f.get(prefix)
	if from != nil {
		t.Fatalf("a new floor starts at %x, want the start of the order", from)
	}
	f.raise(prefix, key(50), gen)
	if from, _ := f.get(prefix); !bytes.Equal(from, key(50)) {
		t.Fatalf("floor %x after a raise, want %x", from, key(50))
	}

	_, gen = f.get(prefix)
	f.written([][]byte{key(60)}) // above the floor: the floor stays, the raise is void
	f.raise(prefix, key(70), gen)
	if from, _ := f.get(prefix); !bytes.Equal(from, key(50)) {
		t.Fatalf("floor %x after a raced raise, want %x", from, key(50))
	}

	f.written([][]byte{key(10)})
	if from, _ := f.get(prefix); !bytes.Equal(from, key(10)) {
		t.Fatalf("floor %x after a write below it, want %x", from, key(10))
	}

	_, gen = f.get(prefix)
	f.reset()
	f.raise(prefix, key(70), gen)
	if from, _ := f.get(prefix); from != nil {
		t.Fatalf("floor %x after a reset and a stale raise, want the start", from)
	}
}

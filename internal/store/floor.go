package store

import (
	"bytes"
	"sync"
)

// Group heads in memory. A group's order entries are written once and
// deleted once, so a group that runs many tasks leaves a trail of
// deletions before its head until a flush or compaction removes them, and
// a scan from the start of the group's order steps over every one; and
// even a short scan is an iterator over every level of the LSM, several
// microseconds, on every look at a group.
//
// So the store remembers, for groups whose head was asked for, a floor:
// a key no live entry of the group sorts before. Every order entry a
// commit writes or deletes updates the floors after Pebble shows it:
//   - an entry written below the floor is the group's head now, and the
//     floor moves down to it, exact;
//   - the exact head deleted leaves the floor where it was, no longer
//     exact: the next head is above it.
//
// GroupHead answers from an exact floor without reading the store, and
// otherwise scans from the floor and raises it to the head found, exact;
// only if no commit touched the group's order since the floor was read,
// which a generation counter tells, so a head found by a scan that may
// have missed a write is not remembered.

// maxFloors bounds the memory floors take; past it they are forgotten,
// which costs only scans from the start.
const maxFloors = 1 << 16

// orderSuffix is the length of an order key after its group's prefix:
// due, sequence and id.
const orderSuffix = 24

type floors struct {
	mu  sync.Mutex
	m   map[string]floor // by group order prefix
	gen uint64           // the last generation handed out
}

type floor struct {
	key   []byte // nil: the start of the group's order
	exact bool   // key is the group's head
	gen   uint64
}

// orderWrite is an order entry a batch wrote (or deleted).
type orderWrite struct {
	key     []byte
	deleted bool
}

// get returns the floor of the group order under prefix and the
// generation to raise it with.
func (f *floors) get(prefix []byte) (floor, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[string(prefix)]; ok {
		return fl, fl.gen
	}
	if f.m == nil || len(f.m) >= maxFloors {
		f.m = make(map[string]floor)
	}
	f.gen++
	fl := floor{gen: f.gen}
	f.m[string(prefix)] = fl
	return fl, fl.gen
}

// raise makes head, found by a scan, the exact floor under prefix, unless
// the group's order was written since get returned gen.
func (f *floors) raise(prefix, head []byte, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.m[string(prefix)]
	if !ok || fl.gen != gen {
		return
	}
	if !bytes.Equal(fl.key, head) {
		fl.key = bytes.Clone(head) // a new slice: scans may still read the old one
	}
	fl.exact = true
	f.m[string(prefix)] = fl
}

// written updates the floors with the order entries a committed batch
// wrote and deleted, in the batch's order, now visible to reads.
func (f *floors) written(ws []orderWrite) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range ws {
		prefix := w.key[:len(w.key)-orderSuffix]
		fl, ok := f.m[string(prefix)]
		if !ok {
			continue
		}
		f.gen++
		fl.gen = f.gen
		switch {
		case w.deleted:
			if fl.exact && bytes.Equal(w.key, fl.key) {
				fl.exact = false
			}
		case fl.key != nil && bytes.Compare(w.key, fl.key) < 0:
			fl.key, fl.exact = bytes.Clone(w.key), true
		}
		f.m[string(prefix)] = fl
	}
}

// reset forgets every floor: a batch replaced whole ranges of state.
func (f *floors) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = nil
}

package store

import (
	"bytes"
	"sync"
)

// Group order floors. A group's order entries are written once and
// deleted once, so a group that runs many tasks leaves a trail of
// deletions before its head until a flush or compaction removes them, and
// a scan from the start of the group's order steps over every one. The
// store remembers, for groups whose head was asked for, the key of the
// head it found: no live entry of the group sorts before it, unless one
// was written since, and every write of an order entry lowers the floor
// again. GroupHead then starts there.
//
// Floors are raised only by GroupHead and only if no write touched the
// group since the floor was read: each write of an order entry is applied
// to the floors after Pebble shows it, and bumps the generation of the
// group's floor, so a head found by a scan that may have missed the write
// is not remembered.

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
	key []byte // nil: the start of the group's order
	gen uint64
}

// get returns where a scan of the group order under prefix may start and
// the generation to raise the floor with.
func (f *floors) get(prefix []byte) ([]byte, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[string(prefix)]; ok {
		return fl.key, fl.gen
	}
	if f.m == nil || len(f.m) >= maxFloors {
		f.m = make(map[string]floor)
	}
	f.gen++
	f.m[string(prefix)] = floor{gen: f.gen}
	return nil, f.gen
}

// raise moves the floor under prefix up to key, the head a scan found,
// unless the group's order was written since get returned gen.
func (f *floors) raise(prefix, key []byte, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[string(prefix)]; ok && fl.gen == gen && !bytes.Equal(fl.key, key) {
		fl.key = bytes.Clone(key) // a new slice: scans may still read the old one
		f.m[string(prefix)] = fl
	}
}

// written lowers the floors below the order entries of a committed batch,
// now visible to reads.
func (f *floors) written(keys [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		prefix := k[:len(k)-orderSuffix]
		fl, ok := f.m[string(prefix)]
		if !ok {
			continue
		}
		f.gen++
		fl.gen = f.gen
		if fl.key != nil && bytes.Compare(k, fl.key) < 0 {
			fl.key = bytes.Clone(k)
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

package store

import (
	"bytes"
	"slices"
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
// a key no live entry of the group sorts before, and, when known, the
// group's first few live entries in order (its front). Every order entry
// a commit writes or deletes updates the floors after Pebble shows it:
//   - an entry written below the floor, or inside a known front, joins the
//     front (one written below the floor of an unknown front is the whole
//     of a new one: nothing live sorts before it);
//   - an entry deleted leaves the front; a front emptied is unknown again,
//     with its floor at the entry deleted last.
//
// GroupHead answers from a known front without reading the store, and
// otherwise scans from the floor and makes the entries it read the front;
// only if no commit touched the group's order since the floor was read,
// which a generation counter tells, so a scan that may have missed a
// write is not remembered.

const (
	// maxFloors bounds the groups remembered; past it one is forgotten,
	// which costs only a scan.
	maxFloors = 1 << 14
	// frontLen is how many entries a scan reads into a front.
	frontLen = 8
	// orderSuffix is the length of an order key after its group's
	// prefix: due, sequence and id.
	orderSuffix = 24
)

type floors struct {
	mu  sync.Mutex
	m   map[string]*floor // by group order prefix
	gen uint64            // the last generation handed out
}

type floor struct {
	key   []byte   // no live entry sorts before it; nil: the start
	front [][]byte // with known: the group's first live entries, in order
	known bool
	whole bool // with known: front holds every live entry of the group
	gen   uint64
}

// orderWrite is an order entry a batch wrote (or deleted).
type orderWrite struct {
	key     []byte
	deleted bool
}

// get returns what is known of the group order under prefix: its head
// (ok false: none, or not known) and whether it is known, or else where
// a scan may start and the generation to remember its result with.
func (f *floors) get(prefix []byte) (head []byte, known bool, from []byte, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[string(prefix)]
	if fl == nil {
		if f.m == nil {
			f.m = make(map[string]*floor)
		}
		for k := range f.m {
			if len(f.m) < maxFloors {
				break
			}
			delete(f.m, k)
		}
		fl = new(floor)
		f.m[string(prefix)] = fl
		f.gen++
		fl.gen = f.gen
	}
	if fl.known {
		if len(fl.front) > 0 {
			head = fl.front[0]
		}
		return head, true, nil, 0
	}
	return nil, false, fl.key, fl.gen
}

// scanned makes front, the entries a scan read in order (whole: all of
// them), the known front under prefix, unless the group's order was
// written since get returned gen.
func (f *floors) scanned(prefix []byte, front [][]byte, whole bool, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[string(prefix)]
	if fl == nil || fl.gen != gen {
		return
	}
	fl.front, fl.known, fl.whole = front, true, whole
	if len(front) > 0 {
		fl.key = front[0]
	}
}

// written updates the floors with the order entries a committed batch
// wrote and deleted, in the batch's order, now visible to reads.
func (f *floors) written(ws []orderWrite) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range ws {
		fl := f.m[string(w.key[:len(w.key)-orderSuffix])]
		if fl == nil {
			continue
		}
		f.gen++
		fl.gen = f.gen
		if w.deleted {
			fl.remove(w.key)
		} else {
			fl.add(w.key)
		}
	}
}

func (fl *floor) add(k []byte) {
	below := fl.key != nil && bytes.Compare(k, fl.key) < 0
	switch {
	case !fl.known:
		if below {
			fl.front, fl.known, fl.whole = [][]byte{bytes.Clone(k)}, true, false
		}
	case fl.whole || len(fl.front) > 0 && bytes.Compare(k, fl.front[len(fl.front)-1]) < 0:
		i, _ := slices.BinarySearchFunc(fl.front, k, bytes.Compare)
		fl.front = slices.Insert(fl.front, i, bytes.Clone(k))
		if len(fl.front) > frontLen {
			fl.front, fl.whole = fl.front[:frontLen], false
		}
	}
	if below {
		fl.key = fl.front[0]
	}
}

func (fl *floor) remove(k []byte) {
	if !fl.known {
		return
	}
	i, found := slices.BinarySearchFunc(fl.front, k, bytes.Compare)
	if !found {
		return
	}
	fl.front = slices.Delete(fl.front, i, i+1)
	if len(fl.front) == 0 && !fl.whole {
		fl.known = false
		fl.key = k
	}
}

// reset forgets every floor: a batch replaced whole ranges of state.
func (f *floors) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = nil
}

package dispatch

// family is the loop-owned state of one correlated key in one partition.
//
// States: idle (forgotten, not in the table); waiting (pending non-empty,
// in the ready queue); busy (one task with the handler); blocked (a
// BlockOnError task failed and is held in head). A family is in the ready
// queue exactly when it is neither busy nor blocked and has pending tasks.
type family[T any] struct {
	key     Key
	pending deque[*task[T]]
	head    *task[T] // the failed task of a blocked family
	nextSeq uint64
	turn    int // tasks run in the current turn
	busy    bool
	blocked bool
}

// readyItem is an entry of the ready queue: a waiting family, or one
// ungated task.
type readyItem[T any] struct {
	fam  *family[T]
	task *task[T]
}

// lookup returns the family for k, creating it if needed.
func (p *partition[T]) lookup(k Key) *family[T] {
	if k.name != "" {
		f := p.names[k.name]
		if f == nil {
			f = p.newFamily(k)
			p.names[k.name] = f
			p.peakNames = max(p.peakNames, len(p.names))
		}
		return f
	}
	f := p.ints[k.id]
	if f == nil {
		f = p.newFamily(k)
		p.ints[k.id] = f
		p.peakInts = max(p.peakInts, len(p.ints))
	}
	return f
}

// find returns the family for k, or nil if it is idle.
func (p *partition[T]) find(k Key) *family[T] {
	if k.name != "" {
		return p.names[k.name]
	}
	return p.ints[k.id]
}

func (p *partition[T]) newFamily(k Key) *family[T] {
	var f *family[T]
	if n := len(p.freeFams); n > 0 {
		f = p.freeFams[n-1]
		p.freeFams = p.freeFams[:n-1]
	} else {
		f = new(family[T])
	}
	f.key = k
	return f
}

// forget drops an idle family so memory follows the active keys.
func (p *partition[T]) forget(f *family[T]) {
	if f.key.name != "" {
		delete(p.names, f.key.name)
		p.names, p.peakNames = shrink(p.names, p.peakNames)
	} else {
		delete(p.ints, f.key.id)
		p.ints, p.peakInts = shrink(p.ints, p.peakInts)
	}
	f.pending.reset()
	*f = family[T]{pending: f.pending}
	if len(p.freeFams) < cap(p.freeFams) {
		p.freeFams = append(p.freeFams, f)
	}
}

// shrink copies a family table that has emptied far below its peak into
// a new map, because Go maps never give memory back on delete. The copy
// is paid for by the deletes since the peak, so it is amortized O(1).
func shrink[K comparable, V any](m map[K]V, peak int) (map[K]V, int) {
	if peak < 1024 || len(m)*8 > peak {
		return m, peak
	}
	fresh := make(map[K]V, len(m))
	for k, v := range m {
		fresh[k] = v
	}
	return fresh, len(m)
}

func (p *partition[T]) activeFamilies() int { return len(p.ints) + len(p.names) }

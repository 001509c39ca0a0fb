package dispatch

import "sync/atomic"

// ring is a bounded multi-producer, single-consumer queue (Vyukov's bounded
// queue with per-slot sequence numbers). Producers reserve a slot with one
// CAS on tail; the consumer reads published slots in order without any
// atomic read-modify-write.
//
// Closing sets the top bit of tail, so a producer's reservation and the
// close are ordered by the same word: every reservation that succeeded
// before the close is published and drained, none succeeds after it.
type ring[E any] struct {
	_     [64]byte
	tail  atomic.Uint64 // next position to reserve; closedBit once closed
	_     [56]byte
	head  uint64 // next position to read; consumer only
	mask  uint64
	slots []ringSlot[E]
}

type ringSlot[E any] struct {
	seq atomic.Uint64
	val E
}

const closedBit = 1 << 63

func newRing[E any](size int) *ring[E] {
	r := &ring[E]{mask: uint64(size - 1), slots: make([]ringSlot[E], size)}
	for i := range r.slots {
		r.slots[i].seq.Store(uint64(i))
	}
	return r
}

// push publishes v, or returns ErrBusy when the ring is full and ErrClosed
// once it is closed.
func (r *ring[E]) push(v E) error {
	pos := r.tail.Load()
	for {
		if pos&closedBit != 0 {
			return ErrClosed
		}
		s := &r.slots[pos&r.mask]
		seq := s.seq.Load()
		switch diff := int64(seq - pos); {
		case diff == 0:
			if r.tail.CompareAndSwap(pos, pos+1) {
				s.val = v
				s.seq.Store(pos + 1)
				return nil
			}
			pos = r.tail.Load()
		case diff < 0:
			// The slot still holds an unread value from one lap ago.
			return ErrBusy
		default:
			pos = r.tail.Load()
		}
	}
}

// pop removes the oldest published value. It reports false when the next
// slot is not published yet, which may be a producer between reserving and
// publishing.
func (r *ring[E]) pop() (E, bool) {
	s := &r.slots[r.head&r.mask]
	if s.seq.Load() != r.head+1 {
		var zero E
		return zero, false
	}
	v := s.val
	var zero E
	s.val = zero // drop references so the GC can reclaim them
	s.seq.Store(r.head + r.mask + 1)
	r.head++
	return v, true
}

// close stops further pushes.
func (r *ring[E]) close() { r.tail.Or(closedBit) }

// empty reports whether every reservation has been read. After close it is
// exact: no reservation can follow.
func (r *ring[E]) empty() bool { return r.head == r.tail.Load()&^closedBit }

// peek reports whether the next slot is published.
func (r *ring[E]) peek() bool { return r.slots[r.head&r.mask].seq.Load() == r.head+1 }

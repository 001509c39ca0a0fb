package wheel

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// Timer is the handle of one timer added to a Wheel, used to cancel it. It
// is a small value (8 bytes) to store beside the timer's owner. A handle
// stays valid only while its timer is pending: once the timer has fired
// or been cancelled, Cancel with the handle returns false, even after its
// slot holds another timer. The zero Timer is never pending. A handle
// belongs to the wheel that returned it.
type Timer struct {
	index uint32 // the timer's entry in the wheel's slab
	gen   uint32 // the entry's generation when the timer was added; never 0
}

// Wheel is a hierarchical timing wheel holding timers with values of type
// T. See the package documentation for its structure and guarantees.
//
// A Wheel is owned by one goroutine and is not safe for concurrent use.
type Wheel[T any] struct {
	epoch     time.Time // tick 0: New's time rounded down to a tick, without monotonic reading
	tick      int64     // Config.Tick in nanoseconds
	slotBits  uint      // log2(SlotsPerLevel)
	slotMask  int64     // SlotsPerLevel-1
	levels    int
	levelOf   [65]uint8 // bits.Len64(due tick XOR current tick) → level, capped at the top
	cur       int64     // current tick
	buckets   []bucket  // levels×slots wheel buckets, then the ready list
	ready     int32     // index of the ready list in buckets
	occupied  []bitmap  // per level: which buckets hold pending timers
	slab      []entry[T]
	free      int32 // head of the entries' free list, or none
	chunks    []chunk
	freeChunk int32 // head of the chunks' free list, or none
	pending   int
	advancing bool // Advance is running; it must not be re-entered from fire
}

// entry is one timer in the slab.
type entry[T any] struct {
	due int64  // nanoseconds since the epoch, saturated: the exact due given to Add
	gen uint32 // bumped on release, so old handles, held or in buckets, stop matching; 0 when retired
	// bucket is the bucket holding the timer while it is pending, and the
	// next entry on the free list once released.
	bucket int32
	value  T
}

const (
	none int32 = -1 // end of a list
	// maxEntries keeps slab indices in an int32.
	maxEntries = math.MaxInt32
)

// New returns an empty wheel whose current time is now rounded down to a
// multiple of cfg.Tick. Zero fields of cfg take the defaults; an invalid
// cfg returns an error.
func New[T any](cfg Config, now time.Time) (*Wheel[T], error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	slots := cfg.SlotsPerLevel
	w := &Wheel[T]{
		epoch:     now.Truncate(cfg.Tick),
		tick:      int64(cfg.Tick),
		slotBits:  slotBits(slots),
		slotMask:  int64(slots - 1),
		levels:    cfg.Levels,
		buckets:   make([]bucket, cfg.Levels*slots+1),
		ready:     int32(cfg.Levels * slots),
		occupied:  make([]bitmap, cfg.Levels),
		free:      none,
		freeChunk: none,
	}
	for i := range w.buckets {
		w.buckets[i] = emptyBucket
	}
	for i := range w.occupied {
		w.occupied[i] = newBitmap(slots)
	}
	for n := 1; n < len(w.levelOf); n++ {
		w.levelOf[n] = uint8(min((n-1)/int(w.slotBits), w.levels-1))
	}
	return w, nil
}

// Grow makes room for n more pending timers, so that adding them does
// not reallocate: an owner that knows its load ahead, as on recovery,
// avoids the copies (and pauses) of growing by appends.
func (w *Wheel[T]) Grow(n int) {
	if n <= 0 {
		return
	}
	w.slab = slices.Grow(w.slab, n)
	// A chunk per chunkItems timers, plus a partly used one per bucket.
	w.chunks = slices.Grow(w.chunks, n/chunkItems+min(n, len(w.buckets)))
}

// Len returns the number of pending timers: added, not yet fired, not
// cancelled.
func (w *Wheel[T]) Len() int { return w.pending }

// Now returns the wheel's current time: the start of the tick of the
// latest Advance (or of New). Inside a fire callback it is the start of
// the tick being fired.
func (w *Wheel[T]) Now() time.Time { return w.timeOfTick(w.cur) }

// Add schedules v to fire at due and returns a handle to cancel it.
//
// A due at or before the current tick fires on the next Advance (or,
// when called from a fire callback, later in the same Advance), after
// the timers already collected for that tick. A due beyond the wheel's
// span waits in the top level and is re-cascaded until it is in range.
// Due times more than about 292 years from the wheel's epoch are
// clamped to that bound.
//
// Add panics if 2^31-1 timers are already pending.
func (w *Wheel[T]) Add(due time.Time, v T) Timer {
	ns := int64(due.Sub(w.epoch)) // saturates instead of overflowing
	t := w.alloc()
	e := &w.slab[t.index]
	e.due = ns
	e.value = v
	if dueTick := w.tickOfNanos(ns); dueTick <= w.cur {
		w.push(w.ready, t)
	} else {
		w.place(t, dueTick)
	}
	w.pending++
	return t
}

// Cancel removes a pending timer and returns its value. It returns false
// if the timer has already fired or been cancelled, and for the zero
// Timer; a stale handle never cancels a later timer in the same slot.
// Cancel may be called from a fire callback.
func (w *Wheel[T]) Cancel(t Timer) (T, bool) {
	var zero T
	if !w.isPending(t) {
		return zero, false
	}
	e := &w.slab[t.index]
	v, b := e.value, e.bucket
	w.release(t)
	w.forget(b, t)
	return v, true
}

// isPending reports whether t is the handle of a pending timer.
func (w *Wheel[T]) isPending(t Timer) bool {
	return t.gen != 0 && uint64(t.index) < uint64(len(w.slab)) && w.slab[t.index].gen == t.gen
}

// Advance moves the wheel to now and calls fire for every timer whose
// due tick is at or before now's tick, with the due given to Add.
//
// Timers fire in non-decreasing order of their firing tick, which is
// their due tick, or the current tick when they were added if that is
// later; timers with the same firing tick fire in the order they were
// added. This holds across any jump: advancing far in one call fires the
// same timers in the same order as advancing one tick at a time.
//
// While fire runs, Now returns the start of the tick being fired. fire
// may call Add and Cancel: a timer it adds with a due at or before now
// fires in this same call, after the timers already collected for its
// firing tick; a timer it cancels does not fire. fire must not call
// Advance (Advance panics). If fire keeps adding timers due at or
// before now, Advance keeps firing them.
//
// Advance with a now earlier than Now does nothing.
func (w *Wheel[T]) Advance(now time.Time, fire func(due time.Time, v T)) {
	if w.advancing {
		panic("wheel: Advance called from a fire callback")
	}
	target := w.tickOfNanos(int64(now.Sub(w.epoch)))
	if target < w.cur {
		return
	}
	w.advancing = true
	defer func() { w.advancing = false }()

	w.fireReady(fire)
	for {
		tick, level, ok := w.nextEvent()
		if !ok || tick > target {
			break
		}
		w.cur = tick
		w.expire(level, tick)
		w.fireReady(fire)
	}
	w.cur = target
}

// NextExpiry returns a time at or before which the next timer may fire,
// so the owner can sleep until then; ok is false when the wheel is
// empty. It is Now when timers are already due, the start of the next
// non-empty slot's tick otherwise: exact for the lowest level, the
// cascade boundary for the others (after which NextExpiry moves closer).
// It is never later than the next due tick. Its cost is O(Levels).
func (w *Wheel[T]) NextExpiry() (time.Time, bool) {
	if w.pending == 0 {
		return time.Time{}, false
	}
	if w.buckets[w.ready].live > 0 {
		return w.Now(), true
	}
	tick, _, _ := w.nextEvent()
	return w.timeOfTick(tick), true
}

// tickOfNanos returns the tick of a time given in nanoseconds since the
// epoch, and -1 for any time before the epoch.
func (w *Wheel[T]) tickOfNanos(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return ns / w.tick
}

func (w *Wheel[T]) timeOfTick(tick int64) time.Time {
	return w.epoch.Add(time.Duration(tick * w.tick))
}

// place puts timer t, due at dueTick > cur, in its bucket: on the level of
// the highest base-SlotsPerLevel digit in which dueTick differs from the
// current tick (the top level if that is beyond it), in the slot of
// dueTick's digit on that level.
func (w *Wheel[T]) place(t Timer, dueTick int64) {
	level := uint(w.levelOf[bits.Len64(uint64(dueTick^w.cur))])
	slot := int(dueTick >> (level * w.slotBits) & w.slotMask)
	w.occupied[level].set(slot)
	w.push(int32(level<<w.slotBits)|int32(slot), t)
}

// nextEvent returns the earliest tick after the current one at which a
// bucket is due to expire, with the bucket's level. Every timer on level
// k below the top is in a slot after the current tick's digit k, and
// every such slot comes before any on level k+1, so the lowest level
// with a set bit after the current digit holds the next event. Failing
// that, the top level's lowest set slot expires in the next turn of the
// wheel.
func (w *Wheel[T]) nextEvent() (tick int64, level int, ok bool) {
	for level := range w.levels {
		shift := uint(level) * w.slotBits
		digit := int(w.cur >> shift & w.slotMask)
		if slot, found := w.occupied[level].nextAfter(digit); found {
			above := shift + w.slotBits
			return w.cur>>above<<above | int64(slot)<<shift, level, true
		}
	}
	top := w.levels - 1
	if slot, found := w.occupied[top].nextAfter(-1); found {
		// Only timers beyond the span can be here, so the next turn
		// starts within int64 range: with Levels×slotBits = 63 there
		// are none.
		turn := uint(w.levels) * w.slotBits
		return (w.cur>>turn+1)<<turn | int64(slot)<<(uint(top)*w.slotBits), top, true
	}
	return 0, 0, false
}

// expire empties the bucket of level whose slot is tick's digit there,
// now that the current tick has reached it. Timers due at tick go to the
// ready list; the others (only on higher levels) are placed again, lower
// down, or back in the top level if still beyond the span. The bucket's
// order is kept in both.
func (w *Wheel[T]) expire(level int, tick int64) {
	slot := int(tick >> (uint(level) * w.slotBits) & w.slotMask)
	b := int32(level<<w.slotBits) | int32(slot)
	c := w.buckets[b].head
	w.buckets[b] = emptyBucket
	w.occupied[level].clear(slot)
	// A slot on the lowest level holds only timers due at its tick,
	// unless that level is also the top, which holds later turns too.
	allDue := level == 0 && w.levels > 1
	for c != none {
		// Placing may grow w.chunks; this chunk's items, detached from
		// every bucket, stay valid in the old array.
		ch := &w.chunks[c]
		next := ch.next
		for _, t := range ch.items[:ch.n] {
			e := &w.slab[t.index]
			if e.gen != t.gen {
				continue // cancelled
			}
			if allDue {
				w.push(w.ready, t)
			} else if dueTick := e.due / w.tick; dueTick <= tick {
				w.push(w.ready, t)
			} else {
				w.place(t, dueTick)
			}
		}
		w.releaseChunk(c)
		c = next
	}
}

// fireReady fires the ready list in order, including timers that fire
// itself adds to it. It reads the list afresh after each call, since fire
// may add to it, cancel from it or compact it.
func (w *Wheel[T]) fireReady(fire func(time.Time, T)) {
	for {
		t, ok := w.popReady()
		if !ok {
			return
		}
		e := &w.slab[t.index]
		due, v := e.due, e.value
		w.release(t) // before fire, so fire sees the timer gone
		fire(w.epoch.Add(time.Duration(due)), v)
	}
}

// alloc takes an entry from the free list, or grows the slab, and
// returns its handle.
func (w *Wheel[T]) alloc() Timer {
	if i := w.free; i != none {
		w.free = w.slab[i].bucket
		return Timer{index: uint32(i), gen: w.slab[i].gen}
	}
	if len(w.slab) >= maxEntries {
		panic("wheel: too many pending timers")
	}
	w.slab = append(w.slab, entry[T]{gen: 1})
	return Timer{index: uint32(len(w.slab) - 1), gen: 1}
}

// release frees the entry of pending timer t.
func (w *Wheel[T]) release(t Timer) {
	e := &w.slab[t.index]
	var zero T
	e.value = zero // drop what T references
	e.gen++
	w.pending--
	if e.gen == 0 {
		// Every generation has been handed out: retire the entry rather
		// than let an old handle or item match a new timer.
		return
	}
	e.bucket = w.free
	w.free = int32(t.index)
}

// Upcoming calls fn for the pending timers due after the current tick and
// at or before until that are on the lowest level, slot by slot, in each
// slot as added, and returns the start of the last tick it covered. Those
// are all such timers up to the end of the lowest level's current turn
// (the SlotsPerLevel ticks that share the current tick's higher digits),
// where it stops: later ones are visited once Advance has cascaded them
// down. An owner uses it to prepare what is about to fire. fn must not
// change the wheel.
func (w *Wheel[T]) Upcoming(until time.Time, fn func(due time.Time, v T)) time.Time {
	last := min(w.tickOfNanos(int64(until.Sub(w.epoch))), w.cur|w.slotMask)
	if last <= w.cur {
		return w.Now()
	}
	for slot := int(w.cur & w.slotMask); ; {
		next, ok := w.occupied[0].nextAfter(slot)
		if !ok || int64(next) > last&w.slotMask {
			return w.timeOfTick(last)
		}
		slot = next
		for c := w.buckets[slot].head; c != none; c = w.chunks[c].next {
			ch := &w.chunks[c]
			for _, t := range ch.items[:ch.n] {
				// A single level is also the top: its slots hold later
				// turns too.
				if e := &w.slab[t.index]; e.gen == t.gen && e.due/w.tick <= last {
					fn(w.epoch.Add(time.Duration(e.due)), e.value)
				}
			}
		}
	}
}

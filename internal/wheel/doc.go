// Package wheel is a hierarchical timing wheel: the scheduler's in-memory
// index of the timers due within its horizon.
//
// A Wheel holds timers, each a value and a due time, and fires them in due
// order as its owner advances it. It never reads the clock or sleeps: the
// owner passes the time to New and Advance, and asks NextExpiry how long
// it may sleep.
//
//	w, err := wheel.New[TaskRef](wheel.Config{}, clock.Now())
//	...
//	t := w.Add(due, ref) // O(1)
//	w.Cancel(t)          // O(1)
//	w.Advance(clock.Now(), func(due time.Time, ref TaskRef) { ... })
//	wake, ok := w.NextExpiry()
//
// A Wheel is owned by one goroutine (a partition loop) and is not safe for
// concurrent use.
//
// # Ticks
//
// Time is counted in ticks of Config.Tick from the epoch: the time given
// to New rounded down to a multiple of Tick. A timer's due tick is
// floor((due - epoch) / Tick); the current tick is that of the latest
// Advance. A timer fires on the first Advance whose tick is at or after
// its due tick, and fire receives the due exactly as given to Add (to the
// nanosecond; not its location or monotonic clock reading), so the owner
// can order each fired batch precisely.
//
// # Levels and slots
//
// With S = SlotsPerLevel = 2^b slots per level, read a tick as a number in
// base S: digit k is bits [k·b, (k+1)·b). A timer due at tick d, while the
// current tick is c < d, sits on the level of the highest digit in which d
// differs from c, in the slot numbered by d's digit on that level. So a
// slot on level k covers S^k ticks and the wheel spans S^Levels ticks (2^32
// ms, about 49.7 days, at the defaults). A due beyond the span differs
// from c above the top level; it goes to the top level, in the slot of its
// top digit, like any other.
//
// Each slot is a bucket: a FIFO list of timer handles, stored in chunks of
// 31 so that walking a bucket reads memory in order and can fetch the
// timers' entries in parallel. Timers due at or before the current tick
// wait in one more bucket, the ready list, which Advance fires first.
//
// # Cascading
//
// When the current tick reaches a multiple of S^k, its digit k changes and
// the slot on level k with the new digit holds exactly the timers that now
// agree with the current tick down to digit k. The wheel empties that slot
// and places each timer again by the same rule: on a lower level, or on
// the ready list if due now. Timers within the span therefore move at most
// Levels-1 times. A timer beyond the span lands back in its own top-level
// slot and waits there for the next turn: it costs one move per span it
// waits.
//
// Since a timer's place depends only on its due tick and the current tick,
// all pending timers with the same due tick share one slot at every
// moment, and a cascade moves a slot's timers in list order into lists
// that are empty: timers due in the same tick fire in the order they were
// added, even if one was added weeks before the other on a higher level.
//
// # Occupancy
//
// Each level has a bitmap of its non-empty slots, with a summary word of
// its non-empty words. Every timer on level k (below the top) sits after
// the current tick's digit k, and all of them come before any timer on
// level k+1, so the next tick at which anything happens is found on the
// lowest level with a set bit after the current digit, in O(Levels). Only
// the top level also holds slots at or before the current digit, for
// timers due in a later turn. Advance jumps from one such tick to the
// next: empty ticks cost nothing, so a jump of hours is not a loop over
// millions of ticks, and NextExpiry is that same tick (a cascade boundary
// rather than the due tick when the next timer is on a higher level).
//
// # Firing order
//
// A timer's firing tick is its due tick, or the current tick at the time
// it was added if that is later (a due in the past). Advance fires timers
// in non-decreasing order of firing tick, and timers with the same firing
// tick in the order they were added. While a timer fires, the current tick
// is its firing tick. A timer added from the fire callback with a due at
// or before the target of the Advance fires in that same call: at the
// current tick after the timers already collected for it, or later in due
// order. Advancing in one step therefore fires the same timers in the same
// order as advancing tick by tick.
//
// # Handles and memory
//
// Timers live in a slab: one slice of entries holding the due time
// (int64 nanoseconds), the value inline, a generation and the index of
// the bucket holding the timer. Freed entries go on a free list and are
// reused, and chunks have their own slab and free list, so a steady state
// allocates nothing. A Timer handle is the entry's index and its
// generation when added; releasing an entry bumps its generation, so a
// stale handle stops matching, and an entry whose 32-bit generation is
// exhausted is retired rather than reused.
//
// Buckets hold the same handles. Cancel releases the entry at once and
// leaves its handle in the bucket, stale, unless it is the bucket's
// newest (then it is removed): buckets are never searched. Walks skip
// stale handles, and a bucket with more stale handles than live ones is
// compacted in place, keeping its order. A bucket without live handles
// gives its chunks back at once.
//
// A pending timer takes 24 bytes of entry when T is 8 bytes, plus 8 bytes
// of handle in a chunk, plus up to 8 more while stale handles await
// compaction. Both slabs grow like an append (Grow reserves room ahead)
// and never shrink, so memory follows the peak number of pending timers.
// Each slot costs 20 bytes more, and a chunk of 256 bytes while it holds
// timers.
//
// # Complexity
//
// Add is O(1), amortized over slab growth. Cancel is O(1), amortized over
// compactions: a compaction costs O(bucket size), no more than the
// bucket's own cascade, and happens only after as many cancels. Advance
// costs O(1) per timer fired, O(1) per timer a cascade moves, O(1) per
// stale handle skipped, and O(Levels) per non-empty slot reached.
// NextExpiry is O(Levels); Upcoming is O(1) per timer it visits and per
// non-empty slot it reaches; Len and Now are O(1).
package wheel

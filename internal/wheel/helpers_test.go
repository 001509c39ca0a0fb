package wheel

import (
	"fmt"
	"testing"
	"time"
)

// epoch0 is a tick-aligned start time for tests (any tick up to 1 s).
var epoch0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newWheel[T any](tb testing.TB, cfg Config, now time.Time) *Wheel[T] {
	tb.Helper()
	w, err := New[T](cfg, now)
	if err != nil {
		tb.Fatalf("New(%+v): %v", cfg, err)
	}
	return w
}

// atTick returns the start of tick n of a wheel whose epoch is epoch0.
func atTick(cfg Config, n int64) time.Time {
	return epoch0.Add(time.Duration(n) * cfg.Tick)
}

// verify checks the wheel's internal invariants: every pending timer's
// handle live exactly once, in the bucket the placement rule gives for
// the current tick (or the ready list if due); bucket counts, chunk
// lists and occupancy bits matching; and the free lists, retired entries
// and pending count accounting for every entry and chunk.
func (w *Wheel[T]) verify() error {
	free := make([]bool, len(w.slab))
	freed := 0
	for i := w.free; i != none; i = w.slab[i].bucket {
		if free[i] || w.slab[i].gen == 0 {
			return fmt.Errorf("free list revisits entry %d or holds a retired one", i)
		}
		free[i] = true
		freed++
	}
	seen := make([]bool, len(w.slab))
	chunksUsed, live := 0, 0
	for b := range w.buckets {
		n, used, err := w.verifyBucket(int32(b), free, seen)
		if err != nil {
			return err
		}
		live += n
		chunksUsed += used
	}
	retired := 0
	for i := range w.slab {
		switch {
		case w.slab[i].gen == 0:
			retired++
		case !free[i] && !seen[i]:
			return fmt.Errorf("pending entry %d is in no bucket", i)
		}
	}
	if live != w.pending || live+freed+retired != len(w.slab) {
		return fmt.Errorf("%d live + %d free + %d retired entries of %d, pending %d",
			live, freed, retired, len(w.slab), w.pending)
	}
	freeChunks := 0
	for c := w.freeChunk; c != none; c = w.chunks[c].next {
		if freeChunks++; freeChunks > len(w.chunks) {
			return fmt.Errorf("chunk free list has a cycle")
		}
	}
	if chunksUsed+freeChunks != len(w.chunks) {
		return fmt.Errorf("%d chunks in buckets + %d free != %d", chunksUsed, freeChunks, len(w.chunks))
	}
	for level := range w.occupied {
		bm := &w.occupied[level]
		for i, word := range bm.words {
			if (word != 0) != (bm.summary&(1<<i) != 0) {
				return fmt.Errorf("level %d: summary bit %d disagrees with word %#x", level, i, word)
			}
		}
	}
	return nil
}

func (w *Wheel[T]) verifyBucket(b int32, free, seen []bool) (live, chunks int, err error) {
	bk := w.buckets[b]
	if bk.headPos != 0 && b != w.ready {
		return 0, 0, fmt.Errorf("wheel bucket %d has a head position", b)
	}
	stale, last := 0, none
	for c, pos := bk.head, bk.headPos; c != none; c, pos = w.chunks[c].next, 0 {
		if chunks++; chunks > len(w.chunks) {
			return 0, 0, fmt.Errorf("bucket %d has a chunk cycle", b)
		}
		ch := &w.chunks[c]
		if ch.next != none && ch.n != chunkItems {
			return 0, 0, fmt.Errorf("bucket %d: chunk %d holds %d handles but is not the tail", b, c, ch.n)
		}
		for _, t := range ch.items[pos:ch.n] {
			if w.slab[t.index].gen != t.gen {
				stale++
				continue
			}
			if free[t.index] || seen[t.index] {
				return 0, 0, fmt.Errorf("bucket %d: live handle %+v is free or seen twice", b, t)
			}
			seen[t.index] = true
			live++
			e := &w.slab[t.index]
			if e.bucket != b {
				return 0, 0, fmt.Errorf("entry %d in bucket %d says bucket %d", t.index, b, e.bucket)
			}
			dueTick := w.tickOfNanos(e.due)
			if want := w.expectedBucket(dueTick); want != b {
				return 0, 0, fmt.Errorf("entry %d due at tick %d (current %d) in bucket %d, want %d",
					t.index, dueTick, w.cur, b, want)
			}
		}
		last = c
	}
	if bk.tail != last || int(bk.live) != live || int(bk.stale) != stale {
		return 0, 0, fmt.Errorf("bucket %d: tail %d live %d stale %d, found tail %d live %d stale %d",
			b, bk.tail, bk.live, bk.stale, last, live, stale)
	}
	if b != w.ready {
		level, slot := int(b>>w.slotBits), int(b&int32(w.slotMask))
		bit := w.occupied[level].words[slot>>6]&(1<<(slot&63)) != 0
		if bit != (live > 0) {
			return 0, 0, fmt.Errorf("level %d slot %d: occupancy bit %v with %d live", level, slot, bit, live)
		}
	}
	return live, chunks, nil
}

// expectedBucket restates the placement rule independently of place.
func (w *Wheel[T]) expectedBucket(dueTick int64) int32 {
	if dueTick <= w.cur {
		return w.ready
	}
	level := w.levels - 1
	for k := range w.levels - 1 {
		above := uint(k+1) * w.slotBits
		if dueTick>>above == w.cur>>above {
			level = k
			break
		}
	}
	slot := dueTick >> (uint(level) * w.slotBits) & w.slotMask
	return int32(level)<<w.slotBits | int32(slot)
}

func mustVerify[T any](tb testing.TB, w *Wheel[T]) {
	tb.Helper()
	if err := w.verify(); err != nil {
		tb.Fatalf("wheel invariant broken: %v", err)
	}
}

package wheel

// chunkItems is the number of timer handles per chunk: a chunk is 256
// bytes, so a bucket's handles are read four cache lines at a time.
const chunkItems = 31

// chunk is a block of a bucket's FIFO list of timer handles. Chunks live
// in one slab with a free list, so buckets share memory and a bucket
// costs nothing once it empties.
type chunk struct {
	items [chunkItems]Timer
	n     int32 // items used; only a bucket's tail chunk is not full (it may be empty)
	next  int32 // next chunk in the bucket, or the free list; none at the end
}

// bucket is a FIFO list of timer handles in chunks. Cancel leaves its
// handle in place, stale: a handle is live only while its generation
// matches its entry's, so the list is never searched. live and stale
// count both kinds; a bucket left with more stale handles than live ones
// is compacted.
type bucket struct {
	head, tail int32 // chunks, or none
	headPos    int32 // handles already taken from the head chunk (ready list only)
	live       int32
	stale      int32
}

var emptyBucket = bucket{head: none, tail: none}

// push appends timer t to bucket b.
func (w *Wheel[T]) push(b int32, t Timer) {
	bk := &w.buckets[b]
	if bk.tail == none || w.chunks[bk.tail].n == chunkItems {
		c := w.allocChunk()
		if bk.tail == none {
			bk.head = c
		} else {
			w.chunks[bk.tail].next = c
		}
		bk.tail = c
	}
	ch := &w.chunks[bk.tail]
	ch.items[ch.n] = t
	ch.n++
	bk.live++
	w.slab[t.index].bucket = b
}

// popReady takes the next live handle from the ready list, dropping stale
// ones and chunks it has finished.
func (w *Wheel[T]) popReady() (Timer, bool) {
	bk := &w.buckets[w.ready]
	for bk.head != none {
		ch := &w.chunks[bk.head]
		if bk.headPos == ch.n {
			if ch.next == none {
				break
			}
			next := ch.next
			w.releaseChunk(bk.head)
			bk.head, bk.headPos = next, 0
			continue
		}
		t := ch.items[bk.headPos]
		bk.headPos++
		if w.slab[t.index].gen != t.gen {
			bk.stale--
			continue
		}
		bk.live--
		return t, true
	}
	w.dropBucket(w.ready)
	return Timer{}, false
}

// forget accounts for timer t, cancelled from bucket b. The newest handle
// of a bucket is removed outright, so adding and cancelling at once
// leaves nothing behind; any other stays, stale. A bucket left without
// live handles drops its chunks and occupancy bit; a mostly stale one is
// compacted.
func (w *Wheel[T]) forget(b int32, t Timer) {
	bk := &w.buckets[b]
	bk.live--
	if tail := &w.chunks[bk.tail]; tail.n > 0 && tail.items[tail.n-1] == t {
		tail.n-- // may leave the tail chunk empty, which push refills
	} else {
		bk.stale++
	}
	switch {
	case bk.live == 0:
		w.dropBucket(b)
		if b != w.ready {
			w.occupied[b>>w.slotBits].clear(int(b & int32(w.slotMask)))
		}
	case bk.stale > bk.live && bk.stale >= chunkItems:
		w.compact(b)
	}
}

// dropBucket empties bucket b, which holds no live handles.
func (w *Wheel[T]) dropBucket(b int32) {
	for c := w.buckets[b].head; c != none; {
		next := w.chunks[c].next
		w.releaseChunk(c)
		c = next
	}
	w.buckets[b] = emptyBucket
}

// compact rewrites bucket b's live handles, in order, from the start of
// its head chunk and frees the chunks left over. Each compaction removes
// at least as many stale handles as it keeps live ones, so its cost is
// O(1) per cancel. The ready list may be compacted while it fires:
// popReady reads its position afresh.
func (w *Wheel[T]) compact(b int32) {
	bk := &w.buckets[b]
	to, n := bk.head, int32(0)
	for from, pos := bk.head, bk.headPos; from != none; from, pos = w.chunks[from].next, 0 {
		for ; pos < w.chunks[from].n; pos++ {
			t := w.chunks[from].items[pos]
			if w.slab[t.index].gen != t.gen {
				continue
			}
			if n == chunkItems { // the write position never passes the read position
				to, n = w.chunks[to].next, 0
			}
			w.chunks[to].items[n] = t
			n++
		}
	}
	rest := w.chunks[to].next
	w.chunks[to].n = n
	w.chunks[to].next = none
	for rest != none {
		next := w.chunks[rest].next
		w.releaseChunk(rest)
		rest = next
	}
	bk.tail, bk.headPos, bk.stale = to, 0, 0
}

func (w *Wheel[T]) allocChunk() int32 {
	if c := w.freeChunk; c != none {
		w.freeChunk = w.chunks[c].next
		w.chunks[c].n, w.chunks[c].next = 0, none
		return c
	}
	if len(w.chunks) >= maxEntries {
		panic("wheel: too many chunks")
	}
	w.chunks = append(w.chunks, chunk{next: none})
	return int32(len(w.chunks) - 1)
}

func (w *Wheel[T]) releaseChunk(c int32) {
	w.chunks[c].next = w.freeChunk
	w.freeChunk = c
}

package wheel

import "math/bits"

// bitmap records which slots of one level hold timers. A summary word
// with one bit per word finds the next non-empty slot in O(1), so
// advancing over empty slots costs nothing per slot.
type bitmap struct {
	summary uint64   // bit i set when words[i] != 0
	words   []uint64 // bit j of word i is slot 64i+j
}

func newBitmap(slots int) bitmap {
	return bitmap{words: make([]uint64, (slots+63)/64)}
}

func (b *bitmap) set(slot int) {
	b.words[slot>>6] |= 1 << (slot & 63)
	b.summary |= 1 << (slot >> 6)
}

func (b *bitmap) clear(slot int) {
	w := slot >> 6
	b.words[w] &^= 1 << (slot & 63)
	if b.words[w] == 0 {
		b.summary &^= 1 << w
	}
}

// nextAfter returns the lowest set slot greater than slot (which may be
// -1 to search from the start).
func (b *bitmap) nextAfter(slot int) (int, bool) {
	from := slot + 1
	w := from >> 6
	if w >= len(b.words) {
		return 0, false
	}
	if rest := b.words[w] >> (from & 63); rest != 0 {
		return from + bits.TrailingZeros64(rest), true
	}
	later := b.summary >> (w + 1) // a shift by 64 yields 0
	if later == 0 {
		return 0, false
	}
	w += 1 + bits.TrailingZeros64(later)
	return w<<6 + bits.TrailingZeros64(b.words[w]), true
}

package wheel

import (
	"math/rand/v2"
	"testing"
)

// TestBitmapNextAfter compares nextAfter with a linear scan over random
// patterns of every size the wheel allows.
func TestBitmapNextAfter(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for slots := 2; slots <= maxSlotsPerLevel; slots *= 2 {
		b := newBitmap(slots)
		set := make([]bool, slots)
		for range 2000 {
			slot := rng.IntN(slots)
			if set[slot] = rng.IntN(3) != 0; set[slot] {
				b.set(slot)
			} else {
				b.clear(slot)
			}
			from := rng.IntN(slots+1) - 1
			want, wantOK := -1, false
			for i := from + 1; i < slots; i++ {
				if set[i] {
					want, wantOK = i, true
					break
				}
			}
			if got, ok := b.nextAfter(from); ok != wantOK || (ok && got != want) {
				t.Fatalf("slots %d: nextAfter(%d) = %d, %v, want %d, %v", slots, from, got, ok, want, wantOK)
			}
		}
		// Empty it: the summary must clear with the words.
		for i := range slots {
			b.clear(i)
		}
		if _, ok := b.nextAfter(-1); ok || b.summary != 0 {
			t.Fatalf("slots %d: cleared bitmap still finds a slot (summary %#x)", slots, b.summary)
		}
	}
}

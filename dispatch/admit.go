package dispatch

import (
	"sync/atomic"

	"github.com/boomerangd/boomerang/internal/mix"
)

// admission counts, per family, the tasks that are accepted but not yet
// started, so TrySubmit can refuse a family over its bound on the
// producer's goroutine without asking the partition loop.
//
// It is a fixed open-addressing table of words packing a 40-bit family tag
// (from the key's hash) and a 24-bit count. A slot whose count is zero is
// free, whatever its tag. Producers claim or increment slots with CAS; the
// loop decrements the slot recorded in the task when the task starts.
//
// The count is exact except in two rare cases, both documented on
// Config.MaxPending: if all probed slots are held by other families the
// task is accepted uncounted, and two producers racing to open the same
// family while a neighbouring slot is freed may open it twice, splitting
// its count. Both err towards accepting, never towards a false rejection.
type admission struct {
	slots []atomic.Uint64
	mask  uint64
	limit uint64
}

const (
	countBits   = 24
	countMask   = 1<<countBits - 1
	maxPending  = countMask
	admitProbes = 8
)

func newAdmission(size, limit int) *admission {
	return &admission{slots: make([]atomic.Uint64, size), mask: uint64(size - 1), limit: uint64(limit)}
}

// acquire counts one more waiting task for the family with hash h and
// returns the slot to release when it starts, or -1 if it is not counted.
func (a *admission) acquire(h uint64) (int32, error) {
	tag := mix.Mix64(h) &^ countMask
	start := h >> 20
	for {
		free, freeWord := -1, uint64(0)
		matched := false
		for i := range uint64(admitProbes) {
			idx := (start + i) & a.mask
			w := a.slots[idx].Load()
			switch {
			case w&countMask == 0:
				if free < 0 {
					free, freeWord = int(idx), w
				}
				continue
			case w&^countMask != tag:
				continue
			case w&countMask >= a.limit:
				return -1, ErrGroupFull
			}
			matched = true
			if a.slots[idx].CompareAndSwap(w, w+1) {
				return int32(idx), nil
			}
			break
		}
		if matched {
			continue // lost a race on our own slot: look again
		}
		if free < 0 {
			return -1, nil
		}
		if a.slots[free].CompareAndSwap(freeWord, tag|1) {
			return int32(free), nil
		}
	}
}

// release uncounts one task counted in slot.
func (a *admission) release(slot int32) {
	a.slots[slot].Add(^uint64(0))
}

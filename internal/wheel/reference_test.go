package wheel

import (
	"container/heap"
	"time"
)

// refModel is the trivial reference the wheel is checked against: every
// pending timer in a binary heap ordered by (firing tick, insertion
// order), where the firing tick is the due tick or, for a due in the
// past, the current tick when the timer was added. Cancelled timers are
// dropped lazily when they reach the top.
type refModel struct {
	epoch   time.Time
	tick    int64 // nanoseconds
	cur     int64 // current tick
	order   refHeap
	timers  []refTimer // by id, which is the insertion order
	pending int
}

type refTimer struct {
	due   int64 // nanoseconds since the epoch, saturated like time.Sub
	state refState
}

type refState uint8

const (
	refPending refState = iota
	refFired
	refCancelled
)

type refItem struct {
	fireTick int64
	id       int
}

type refHeap []refItem

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	if h[i].fireTick != h[j].fireTick {
		return h[i].fireTick < h[j].fireTick
	}
	return h[i].id < h[j].id
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(refItem)) }
func (h *refHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newRefModel(epoch time.Time, tick time.Duration) *refModel {
	return &refModel{epoch: epoch, tick: int64(tick)}
}

// tickOf is floor((t - epoch) / tick), with every time before the epoch
// at tick -1.
func (m *refModel) tickOf(t time.Time) int64 {
	ns := int64(t.Sub(m.epoch))
	if ns < 0 {
		return -1
	}
	return ns / m.tick
}

func (m *refModel) timeOfTick(tick int64) time.Time {
	return m.epoch.Add(time.Duration(tick * m.tick))
}

func (m *refModel) add(due time.Time) int {
	id := len(m.timers)
	m.timers = append(m.timers, refTimer{due: int64(due.Sub(m.epoch))})
	heap.Push(&m.order, refItem{fireTick: max(m.tickOf(due), m.cur), id: id})
	m.pending++
	return id
}

func (m *refModel) cancel(id int) bool {
	if id < 0 || id >= len(m.timers) || m.timers[id].state != refPending {
		return false
	}
	m.timers[id].state = refCancelled
	m.pending--
	return true
}

// next returns the pending timer that fires first, if any.
func (m *refModel) next() (refItem, bool) {
	for len(m.order) > 0 {
		top := m.order[0]
		if m.timers[top.id].state == refPending {
			return top, true
		}
		heap.Pop(&m.order)
	}
	return refItem{}, false
}

// pop fires the next timer if it is due at or before target, making its
// firing tick current.
func (m *refModel) pop(target int64) (int, bool) {
	top, ok := m.next()
	if !ok || top.fireTick > target {
		return 0, false
	}
	heap.Pop(&m.order)
	m.timers[top.id].state = refFired
	m.pending--
	m.cur = top.fireTick
	return top.id, true
}

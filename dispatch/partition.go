package dispatch

import (
	"sync"
	"sync/atomic"
)

// ringBatch bounds how many submissions one loop step takes from the ring,
// so completions and control requests are never starved by a flood.
const ringBatch = 1024

// entry is what a producer writes into the ring.
type entry[T any] struct {
	key   Key
	value T
	mode  Mode
	slot  int32
}

func (e *entry[T]) gated() bool { return e.mode != Immediate && e.key.Correlated() }

// ctrlOp is a request from another goroutine that only the loop may carry
// out: Unblock, Skip, or a barrier used by tests.
type ctrlOp struct {
	key   Key
	kind  ctrlKind
	reply chan error
}

// ctrlReply is an answer held until the end of the step, so that when
// Unblock or Skip returns, the family's next task has been dispatched and
// counted if a worker was free.
type ctrlReply struct {
	op  *ctrlOp
	err error
}

type ctrlKind uint8

const (
	ctrlUnblock ctrlKind = iota
	ctrlSkip
	ctrlBarrier
)

// partition is one single-writer loop with its ring, families, ready queue
// and workers. Fields above the line are shared with other goroutines
// through atomics, channels or ctrlMu; fields below are the loop's alone.
type partition[T any] struct {
	index int
	cfg   *Config[T]
	ring  *ring[entry[T]]
	admit *admission // nil when MaxPending is -1

	done     atomic.Pointer[task[T]] // completion stack, pushed by any goroutine
	sleeping atomic.Bool
	wakeCh   chan struct{}
	work     chan *task[T] // handoff to workers
	starved  atomic.Bool   // the loop found work full and waits for a worker
	closing  atomic.Bool
	abort    atomic.Bool

	ctrlMu  sync.Mutex
	ctrl    []*ctrlOp
	ctrlN   atomic.Int32
	stopped bool // guarded by ctrlMu

	stats publishedStats

	// ---- loop-owned ----
	ints      map[int64]*family[T]
	names     map[string]*family[T]
	ready     deque[readyItem[T]]
	barriers  []*ctrlOp
	replies   []ctrlReply // answers sent once the step has dispatched
	freeTasks []*task[T]
	freeFams  []*family[T]
	peakInts  int
	peakNames int
	maxQueued uint64
	inflight  int
	blocked   int
	cnt       counters
}

func newPartition[T any](index int, cfg *Config[T]) *partition[T] {
	p := &partition[T]{
		index:     index,
		cfg:       cfg,
		ring:      newRing[entry[T]](cfg.RingSize),
		wakeCh:    make(chan struct{}, 1),
		work:      make(chan *task[T], cfg.Handoff),
		ints:      make(map[int64]*family[T]),
		names:     make(map[string]*family[T]),
		freeTasks: make([]*task[T], 0, cfg.RingSize+cfg.Handoff),
		freeFams:  make([]*family[T], 0, cfg.RingSize),
		maxQueued: uint64(cfg.MaxQueued),
	}
	if cfg.MaxPending > 0 {
		p.admit = newAdmission(16*cfg.RingSize, cfg.MaxPending)
	}
	return p
}

// wake makes a sleeping loop run. Only the caller that flips sleeping sends
// the token, and the loop takes it before it can sleep again, so the send
// never blocks.
func (p *partition[T]) wake() {
	if p.sleeping.Load() && p.sleeping.CompareAndSwap(true, false) {
		p.wakeCh <- struct{}{}
	}
}

// completed pushes a finished task onto the completion stack.
func (p *partition[T]) completed(t *task[T]) {
	for {
		top := p.done.Load()
		t.next = top
		if p.done.CompareAndSwap(top, t) {
			break
		}
	}
	p.wake()
}

// run is the partition loop. It exits once Close has been called and every
// accepted task has run, or at once if Close's context expired.
func (p *partition[T]) run(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		progressed := p.step()
		if p.closing.Load() && (p.abort.Load() || p.drained()) {
			break
		}
		if !progressed {
			p.sleep()
		}
	}
	p.shutdown()
}

// step does one round of work and reports whether anything happened.
func (p *partition[T]) step() bool {
	var ops []*ctrlOp
	if p.ctrlN.Load() > 0 {
		ops = p.takeControl()
	}
	n := p.drainCompleted()
	n += p.drainRing()
	for _, op := range ops {
		n += p.control(op)
	}
	n += p.dispatch()
	if n > 0 {
		p.publish()
	}
	for _, r := range p.replies {
		r.op.reply <- r.err
	}
	clear(p.replies)
	p.replies = p.replies[:0]
	if len(p.barriers) > 0 && p.ring.empty() {
		for _, op := range p.barriers {
			op.reply <- nil
		}
		p.barriers = p.barriers[:0]
	}
	return n > 0
}

func (p *partition[T]) sleep() {
	if p.cfg.beforeSleep != nil {
		p.cfg.beforeSleep(p.index)
	}
	p.sleeping.Store(true)
	if p.hasWork() {
		if !p.sleeping.CompareAndSwap(true, false) {
			<-p.wakeCh // a waker won the flag; take its token
		}
		return
	}
	<-p.wakeCh
}

// hasWork is checked after announcing sleep, so anything published before a
// waker saw sleeping == false is found here.
func (p *partition[T]) hasWork() bool {
	return p.done.Load() != nil ||
		p.ctrlN.Load() > 0 ||
		(p.cnt.queued < p.maxQueued && p.ring.peek()) ||
		(p.ready.len() > 0 && !p.starved.Load()) ||
		p.abort.Load() ||
		(p.closing.Load() && p.drained())
}

// drained reports that nothing accepted is left to run, apart from tasks
// held by blocked families.
func (p *partition[T]) drained() bool {
	return p.inflight == 0 && p.ready.len() == 0 && p.ring.empty()
}

func (p *partition[T]) drainCompleted() int {
	if p.done.Load() == nil {
		return 0
	}
	var list *task[T]
	for t := p.done.Swap(nil); t != nil; {
		next := t.next
		t.next = list
		list, t = t, next
	}
	n := 0
	for t := list; t != nil; n++ {
		next := t.next
		t.next = nil
		p.finished(t)
		t = next
	}
	return n
}

// finished applies a task's result to its family.
func (p *partition[T]) finished(t *task[T]) {
	p.inflight--
	if t.result == Failure {
		p.cnt.failed++
	} else {
		p.cnt.completed++
	}
	f := t.fam
	if f == nil {
		p.recycle(t)
		return
	}
	f.busy = false
	if t.result == Failure && t.mode == BlockOnError {
		f.blocked, f.head = true, t
		t.slot = -1
		p.blocked++
		return
	}
	p.recycle(t)
	p.requeue(f)
}

// requeue puts a family that just stopped being busy or blocked back in
// line: at the front while its turn lasts, else at the back.
func (p *partition[T]) requeue(f *family[T]) {
	switch {
	case f.pending.len() == 0:
		p.forget(f)
	case f.turn < p.cfg.Slice:
		p.ready.pushFront(readyItem[T]{fam: f})
	default:
		f.turn = 0
		p.ready.pushBack(readyItem[T]{fam: f})
	}
}

func (p *partition[T]) drainRing() int {
	n := 0
	for n < ringBatch && p.cnt.queued < p.maxQueued {
		e, ok := p.ring.pop()
		if !ok {
			break
		}
		n++
		p.accept(&e)
	}
	return n
}

// accept turns a ring entry into a task and queues it.
func (p *partition[T]) accept(e *entry[T]) {
	t := p.newTask(e)
	p.cnt.submitted++
	p.cnt.queued++
	if !e.gated() {
		p.ready.pushBack(readyItem[T]{task: t})
		return
	}
	f := p.lookup(e.key)
	f.nextSeq++
	t.seq, t.fam = f.nextSeq, f
	waiting := f.busy || f.blocked || f.pending.len() > 0
	f.pending.pushBack(t)
	if waiting {
		p.cnt.queuedBehind++
		p.cnt.maxDepth = max(p.cnt.maxDepth, uint64(f.pending.len()))
		return
	}
	p.cnt.maxDepth = max(p.cnt.maxDepth, 1)
	p.ready.pushBack(readyItem[T]{fam: f})
}

// dispatch hands ready work to the workers until the handoff is full.
func (p *partition[T]) dispatch() int {
	n := 0
	for p.ready.len() > 0 {
		it := p.ready.front()
		t := it.task
		if it.fam != nil {
			t = it.fam.pending.front()
		}
		slot := t.slot // read before the worker owns t
		if !p.handOff(t) {
			break
		}
		p.ready.popFront()
		if f := it.fam; f != nil {
			f.pending.popFront()
			f.busy = true
			f.turn++
		}
		if slot >= 0 {
			p.admit.release(slot)
		}
		p.cnt.queued--
		p.inflight++
		n++
	}
	p.cnt.dispatched += uint64(n)
	return n
}

// handOff gives t to a worker without blocking. When the handoff is full it
// marks the partition starved, so the next worker to take a task wakes the
// loop, and tries once more to close the race with that worker.
func (p *partition[T]) handOff(t *task[T]) bool {
	select {
	case p.work <- t:
		return true
	default:
	}
	p.starved.Store(true)
	select {
	case p.work <- t:
		return true
	default:
		return false
	}
}

func (p *partition[T]) newTask(e *entry[T]) *task[T] {
	var t *task[T]
	if n := len(p.freeTasks); n > 0 {
		t = p.freeTasks[n-1]
		p.freeTasks = p.freeTasks[:n-1]
	} else {
		t = &task[T]{part: p}
	}
	t.key, t.value, t.mode, t.slot = e.key, e.value, e.mode, e.slot
	t.result, t.attempt, t.seq, t.fam = Success, 0, 0, nil
	return t
}

func (p *partition[T]) recycle(t *task[T]) {
	var zero T
	t.value, t.fam = zero, nil
	t.rearm()
	if len(p.freeTasks) < cap(p.freeTasks) {
		p.freeTasks = append(p.freeTasks, t)
	}
}

func (p *partition[T]) publish() {
	s, c := &p.stats, &p.cnt
	s.seq.Add(1) // odd: readers retry until the stores below are done
	defer s.seq.Add(1)
	s.submitted.Store(c.submitted)
	s.dispatched.Store(c.dispatched)
	s.completed.Store(c.completed)
	s.failed.Store(c.failed)
	s.queuedBehind.Store(c.queuedBehind)
	s.maxDepth.Store(c.maxDepth)
	s.abandoned.Store(c.abandoned)
	s.queued.Store(c.queued)
	s.active.Store(uint64(p.activeFamilies()))
	s.blocked.Store(uint64(p.blocked))
	s.inflight.Store(uint64(p.inflight))
}

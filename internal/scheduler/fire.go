package scheduler

import (
	"cmp"
	"slices"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// advance fires every timer that is due, in wheel time order, then by id.
func (p *partition) advance() {
	p.wheel.Advance(p.wall(), func(at time.Time, t timer) {
		p.fired = append(p.fired, firedTimer{at: at, timer: t})
	})
	if len(p.fired) == 0 {
		return
	}
	slices.SortFunc(p.fired, func(a, b firedTimer) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.id, b.id))
	})
	for _, ft := range p.fired {
		if ft.run != nil {
			ft.run.woken()
			p.runGroup(ft.run, false)
			continue
		}
		delete(p.timers, ft.id)
		p.fire(ft.id)
	}
	clear(p.fired)
	p.fired = p.fired[:0]
	p.startAll()
}

// Records of tasks about to fire are read ahead of their due time
// (readAhead): the tasks due in the next readAheadSpan, gathered each half
// span and read in key order, are largely neighbours in the store, where
// the tasks of one tick alone are spread over every shard; that costs a
// fraction of the seeks, and none of it when they fire.
const (
	readAheadSpan  = 32 * time.Millisecond
	readAheadMax   = taskCacheSize / 4 // records gathered in one span at most
	readAheadChunk = 128               // records read in one turn of the loop at most
)

// readAhead reads the records of tasks of no ordered group due within
// readAheadSpan into the partition's cache: it gathers their ids once the
// span gathered last is half gone, and reads them in order, a chunk each
// turn, after the turn's work, so that the tasks due now do not wait for
// it.
func (p *partition) readAhead() {
	if now := p.wheel.Now(); !p.readThrough.After(now.Add(readAheadSpan / 2)) {
		from := p.readThrough
		ids := p.toRead[:0]
		p.readThrough = p.wheel.Upcoming(now.Add(readAheadSpan), func(due time.Time, t timer) {
			if t.run == nil && due.After(from) && len(ids) < readAheadMax {
				ids = append(ids, t.id)
			}
		})
		slices.Sort(ids)
		p.toRead, p.readNext = ids, 0
	}
	chunk := p.toRead[p.readNext:min(len(p.toRead), p.readNext+readAheadChunk)]
	p.readNext += len(chunk)
	if err := p.tasks.Tasks(p.s.cfg.Store, chunk, func(uint64, *storepb.Task) {}); err != nil {
		p.s.fail(err)
	}
}

// fire handles a task's expired timer: a retry of its group's head, or a
// task of no ordered group that is due.
func (p *partition) fire(id uint64) {
	if f := p.flights[id]; f != nil {
		if f.state == flightRetrying {
			p.retry(f)
		}
		return
	}
	if p.used() < p.slots && len(p.ready) == 0 {
		p.starting = append(p.starting, id)
		return
	}
	p.ready = append(p.ready, readyItem{id: id})
}

// pump starts waiting work, oldest first, while delivery slots are free.
func (p *partition) pump() {
	n := 0
	for n < len(p.ready) && p.used() < p.slots {
		it := p.ready[n]
		n++
		if it.run != nil {
			it.run.state = runIdle
			p.runGroup(it.run, true)
		} else {
			p.starting = append(p.starting, it.id)
		}
	}
	left := copy(p.ready, p.ready[n:])
	clear(p.ready[left:])
	p.ready = p.ready[:left]
	p.startAll()
}

// used counts the delivery slots taken, by deliveries under way and by
// tasks about to start.
func (p *partition) used() int { return p.busy + len(p.starting) }

// startAll starts the due tasks of no ordered group collected in
// p.starting, reading their records with one iterator: waiting tasks
// cost only their id.
func (p *partition) startAll() {
	if len(p.starting) == 0 {
		return
	}
	ids := p.starting[:0]
	for _, id := range p.starting {
		_, changing := p.pending[id]
		_, armed := p.timers[id]
		// A task that changed since its timer was set is left to that
		// change, which puts it back in line.
		if !changing && !armed && p.flights[id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	tasks := make([]*storepb.Task, 0, len(ids))
	err := p.tasks.Tasks(p.s.cfg.Store, ids, func(_ uint64, t *storepb.Task) {
		if t != nil {
			tasks = append(tasks, t)
		}
	})
	clear(p.starting)
	p.starting = p.starting[:0]
	if err != nil {
		p.s.fail(err)
		return
	}
	for _, t := range tasks {
		p.startTask(t)
	}
}

// startTask starts t, a due task of no ordered group as stored.
func (p *partition) startTask(t *storepb.Task) {
	if store.Ordered(t) {
		p.wakeGroup(t.Client, t.Group, store.WakeMs(t))
		return
	}
	if store.WakeMs(t) > p.wallMs() {
		p.applyTask(t)
		return
	}
	f := &flight{id: t.Id}
	p.flights[t.Id] = f
	p.deliver(f, t)
}

// applyTask puts a task whose durable state is t back in line: armed for
// its due time or next attempt, or its group woken then.
func (p *partition) applyTask(t *storepb.Task) {
	if store.Ordered(t) {
		p.wakeGroup(t.Client, t.Group, store.WakeMs(t))
		return
	}
	p.unschedule(t.Id)
	if at := store.WakeMs(t); at < p.loadedUntil {
		p.arm(t.Id, at)
	}
}

func (p *partition) deliver(f *flight, t *storepb.Task) {
	f.state, f.task = flightDelivering, t
	p.busy++
	p.s.deliveries.Add(1)
	p.send(f)
}

// send hands a started attempt to the deliverer, if this node holds its
// shard's lease: without it another node may lead the shard by now, so the
// attempt waits until the lease is regained (leased) or the shard is
// lost (follow). The attempt starts, for its group's rate limit, when it
// is handed over: one that waited for the lease would otherwise count as
// started before it reached the receiver, and the receiver could see
// more attempts in a window than the limit allows.
func (p *partition) send(f *flight) {
	shard := store.ShardOf(f.id)
	f.held = !p.s.node.Leased(shard)
	if f.held {
		p.unleased[shard] = append(p.unleased[shard], f)
		return
	}
	f.startedMs = p.wallMs()
	p.s.counters.attempts.Add(1)
	d := Delivery{Task: f.task, Attempt: int(f.task.Attempts) + 1, Term: p.leading[shard]}
	p.s.cfg.Deliverer.Deliver(d, func(err error) {
		p.inbox.post(func() { p.delivered(f, err) })
	})
}

// leased sends the attempts that waited for the shard's lease.
func (p *partition) leased(shard uint16) {
	held := p.unleased[shard]
	delete(p.unleased, shard)
	for _, f := range held {
		if p.flights[f.id] == f && f.state == flightDelivering {
			p.send(f)
		}
	}
}

// retry starts the next attempt of a group's retrying head, once any
// change to it is durable.
func (p *partition) retry(f *flight) {
	if p.stopping {
		return
	}
	if _, changing := p.pending[f.id]; changing {
		p.waitFor(f.id, func() {
			if p.flights[f.id] == f && f.state == flightRetrying {
				p.retry(f)
			}
		})
		return
	}
	t, ok, err := p.current(f.id)
	if err != nil {
		p.s.fail(err)
		return
	}
	if !ok {
		p.settle(f, nil)
		return
	}
	if t.NextAttemptMs > p.wallMs() {
		p.arm(f.id, t.NextAttemptMs)
		return
	}
	if f.run != nil {
		if at, err := p.rateWait(t.Client, t.Group, p.wallMs()); err != nil || at > 0 {
			if err != nil {
				p.s.fail(err)
				return
			}
			p.arm(f.id, at)
			return
		}
	}
	p.deliver(f, t)
}

// settle forgets a started task whose occurrence is over, lets its group
// go on, and puts its next occurrence, if any, in line.
func (p *partition) settle(f *flight, next *storepb.Task) {
	delete(p.flights, f.id)
	p.unschedule(f.id)
	if f.run != nil {
		f.run.state = runIdle
		p.runGroup(f.run, false)
	}
	if next != nil {
		p.applyTask(next)
	}
}

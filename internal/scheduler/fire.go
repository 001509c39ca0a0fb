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
	if p.busy < p.slots && len(p.ready) == 0 {
		p.startTask(id)
		return
	}
	p.ready = append(p.ready, readyItem{id: id})
}

// pump starts waiting work, oldest first, while delivery slots are free.
func (p *partition) pump() {
	n := 0
	for n < len(p.ready) && p.busy < p.slots {
		it := p.ready[n]
		n++
		if it.run != nil {
			it.run.state = runIdle
			p.runGroup(it.run, true)
		} else {
			p.startTask(it.id)
		}
	}
	left := copy(p.ready, p.ready[n:])
	clear(p.ready[left:])
	p.ready = p.ready[:left]
}

// startTask starts a due task of no ordered group, reading its record
// now: waiting tasks cost only their id. A task that changed since its
// timer was set is left to that change, which puts it back in line.
func (p *partition) startTask(id uint64) {
	if _, changing := p.pending[id]; changing {
		return
	}
	if _, armed := p.timers[id]; armed || p.flights[id] != nil {
		return
	}
	t, ok, err := p.current(id)
	if err != nil {
		p.s.fail(err)
		return
	}
	if !ok {
		return
	}
	if store.Ordered(t) {
		p.wakeGroup(t.Client, t.Group, store.WakeMs(t))
		return
	}
	if store.WakeMs(t) > p.wallMs() {
		p.applyTask(t)
		return
	}
	f := &flight{id: id}
	p.flights[id] = f
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
	p.s.counters.attempts.Add(1)
	d := Delivery{Task: t, Attempt: int(t.Attempts) + 1, Term: p.leading[store.ShardOf(t.Id)]}
	p.s.cfg.Deliverer.Deliver(d, func(err error) {
		p.inbox.post(func() { p.delivered(f, err) })
	})
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

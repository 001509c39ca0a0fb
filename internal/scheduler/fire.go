package scheduler

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/boomerangd/boomerang/dispatch"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// advance fires every timer that is due, in (due, id) order, which within
// a group is due-then-sequence order.
func (p *partition) advance() {
	p.wheel.Advance(p.now(), func(due time.Time, id uint64) {
		p.fired = append(p.fired, firedTimer{due: due.UnixMilli(), id: id})
	})
	if len(p.fired) == 0 {
		return
	}
	slices.SortFunc(p.fired, func(a, b firedTimer) int {
		return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.id, b.id))
	})
	p.readFired()
	for _, ft := range p.fired {
		delete(p.timers, ft.id)
		p.fire(ft.id)
	}
	clear(p.fired)
	p.fired = p.fired[:0]
	clear(p.read)
}

// readFired reads the records fire will need, those of fired tasks not in
// flight and without a pending change, with one store iterator: several
// times cheaper than a read each (BenchmarkReadTasks in the store). The
// store holds their current state for the whole advance, since only this
// loop changes tasks and a change stays pending until the loop applies
// it. On an error fire reads each record itself and reports it.
func (p *partition) readFired() {
	if len(p.fired) < 2 {
		return
	}
	ids := p.toRead[:0]
	for _, ft := range p.fired {
		if _, ok := p.flights[ft.id]; ok {
			continue
		}
		if _, ok := p.pending[ft.id]; ok {
			continue
		}
		ids = append(ids, ft.id)
	}
	slices.Sort(ids)
	err := p.s.cfg.Store.Tasks(slices.Compact(ids), func(id uint64, t *storepb.Task) { p.read[id] = t })
	if err != nil {
		clear(p.read)
	}
	p.toRead = ids[:0]
}

// firedTask is current for a fired task: its record as readFired found
// it, unless it changed since.
func (p *partition) firedTask(id uint64) (*storepb.Task, bool, error) {
	if t, ok := p.read[id]; ok {
		if _, changing := p.pending[id]; !changing {
			return t, t != nil, nil
		}
	}
	return p.current(id)
}

// fire handles one expired timer: a retry that is due, or a task whose
// occurrence is due and now enters its group gate.
func (p *partition) fire(id uint64) {
	if f := p.flights[id]; f != nil {
		if f.state == flightRetrying {
			p.retry(f)
		}
		return
	}
	t, ok, err := p.firedTask(id)
	if err != nil {
		p.s.fail(err)
		return
	}
	if !ok {
		return
	}
	f := &flight{p: p, id: id, task: t, mode: engineMode(t.Mode)}
	if t.Group != "" && t.Mode != storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE {
		f.group = groupKey(t.Client, t.Group)
		f.key = dispatch.StringKey(f.group)
	}
	p.flights[id] = f
	p.submit(f)
}

func engineMode(m storepb.DispatchMode) dispatch.Mode {
	switch m {
	case storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR:
		return dispatch.BlockOnError
	case storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE:
		return dispatch.Immediate
	}
	return dispatch.NextOnError
}

// submit hands a fired task to the group gate, or keeps it in the backlog
// (behind any already there, to keep the order) while the engine is full.
//
// A task outside any gated group has nothing to wait for: it starts here,
// which saves the hand-offs through the engine's goroutines.
func (p *partition) submit(f *flight) {
	if f.group == "" {
		p.s.counters.submitted.Add(1)
		p.s.counters.ungated.Add(1)
		p.start(f)
		return
	}
	if len(p.backlog) == 0 {
		err := p.s.engine.TrySubmitMode(f.key, f.mode, f)
		if err == nil {
			p.s.counters.submitted.Add(1)
			return
		}
		if !errors.Is(err, dispatch.ErrBusy) {
			p.s.fail(err)
			return
		}
	}
	p.backlog = append(p.backlog, f)
}

func (p *partition) submitBacklog() {
	n := 0
	for _, f := range p.backlog {
		if p.s.engine.TrySubmitMode(f.key, f.mode, f) != nil {
			break
		}
		p.s.counters.submitted.Add(1)
		n++
	}
	left := copy(p.backlog, p.backlog[n:])
	clear(p.backlog[left:])
	p.backlog = p.backlog[:left]
}

// handle is the engine's handler: the group gate has let the task through.
// It runs on an engine worker, so it only tells the loop.
func handle(t dispatch.Task[*flight]) dispatch.Result {
	f := t.Value()
	f.engine = t
	f.p.inbox.post(func() { f.p.start(f) })
	return dispatch.Later
}

// start is the loop's side of the engine handler: the gate let f through.
func (p *partition) start(f *flight) {
	p.s.counters.started.Add(1)
	f.started = true
	if p.stopping {
		return // left for the engine to abandon; it fires again after restart
	}
	if f.state == flightBlocked {
		p.holdBlocked(f)
		return
	}
	p.proceed(f)
}

// proceed decides what a task the gate let through does now. While a
// change to it is in the journal it waits, holding its group, and resume
// brings it back once the change is durable.
func (p *partition) proceed(f *flight) {
	if _, changing := p.pending[f.id]; changing {
		f.waiting = true
		return
	}
	t := f.task
	if f.stale {
		var ok bool
		var err error
		if t, ok, err = p.current(f.id); err != nil || !ok {
			p.release(f, true) // cancelled while queued
			return
		}
		f.stale, f.task = false, t
	}
	now := p.now().UnixMilli()
	switch {
	case t.DueMs > now:
		// Moved into the future while queued: back to the wheel.
		p.release(f, true)
		p.schedule(t)
	case t.NextAttemptMs > now:
		f.state = flightRetrying
		p.arm(f.id, t.NextAttemptMs)
	default:
		p.deliver(f, t)
	}
}

// retry starts the next attempt of a retrying task, once any change to it
// is durable.
func (p *partition) retry(f *flight) {
	if p.stopping {
		return
	}
	if _, changing := p.pending[f.id]; changing {
		f.waiting = true
		return
	}
	t, ok, err := p.current(f.id)
	if err != nil || !ok {
		p.release(f, true)
		return
	}
	p.deliver(f, t)
}

// resume continues a fired task that waited for a change to be durable.
func (p *partition) resume(id uint64) {
	f := p.flights[id]
	if f == nil || !f.waiting {
		return
	}
	if _, changing := p.pending[id]; changing {
		return
	}
	f.waiting = false
	if f.state == flightRetrying {
		p.retry(f)
	} else {
		p.proceed(f)
	}
}

func (p *partition) deliver(f *flight, t *storepb.Task) {
	f.state, f.task = flightDelivering, t
	d := Delivery{Task: t, Attempt: int(t.Attempts) + 1}
	p.s.deliveries.Add(1)
	p.s.counters.attempts.Add(1)
	p.s.cfg.Deliverer.Deliver(d, func(err error) {
		p.inbox.post(func() { p.delivered(f, err) })
	})
}

// release opens the group gate behind f and forgets it. ok false marks a
// final failure, which blocks a BLOCK_ON_ERROR group in the engine.
func (p *partition) release(f *flight, ok bool) {
	delete(p.flights, f.id)
	p.unschedule(f.id)
	if !f.started {
		// Still in the backlog or the engine queue: mark it so its start
		// releases it.
		f.stale, f.task = true, nil
		p.flights[f.id] = f
		return
	}
	r := dispatch.Success
	if !ok {
		r = dispatch.Failure
	}
	p.complete(f, r)
}

// complete reports f's end to the engine, which opens or blocks its gate.
func (p *partition) complete(f *flight, r dispatch.Result) {
	p.s.counters.completed.Add(1)
	if f.group == "" {
		p.s.counters.ungatedDone.Add(1)
		return
	}
	f.engine.Complete(r)
}

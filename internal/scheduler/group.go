package scheduler

import (
	"fmt"
	"strings"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/wheel"
)

// groupRun is what the loop knows of an ordered group at run time. Its
// order lives in the store (the group order index, by due time then
// sequence); the loop holds only this: whether the group is idle,
// waiting for a delivery slot, running its head, or blocked, and when to
// look at it again. It is derived from the store and rebuilt at start.
type groupRun struct {
	key           string // store.GroupRef
	client, group string
	state         runState
	wake          wheel.Timer
	wakeAt        int64 // wall ms the wake is armed for; 0: none
}

type runState uint8

const (
	runIdle    runState = iota
	runReady            // its head is due, waiting in the ready queue
	runWaiting          // its head has an undurable change
	runRunning          // its head is started: delivering, settling or retrying
	runBlocked          // a BLOCK_ON_ERROR head is in the dead letter queue
)

// runOf returns the run of a group, making one if create is set.
func (p *partition) runOf(key string, create bool) *groupRun {
	g := p.runs[key]
	if g == nil && create {
		client, group, _ := strings.Cut(key, "\x00")
		g = &groupRun{key: key, client: client, group: group}
		p.runs[key] = g
	}
	return g
}

// wakeGroup tells an idle group that one of its tasks is due at atMs
// (wall), so that it looks at its head then, or now if that is past.
func (p *partition) wakeGroup(client, group string, atMs int64) {
	g := p.runOf(store.GroupRef(client, group), atMs < p.loadedUntil)
	if g == nil || g.state != runIdle {
		return
	}
	if atMs <= p.wallMs() {
		p.runGroup(g, false)
		return
	}
	p.sleepUntil(g, atMs)
}

// sleepUntil arms g's wake for atMs unless it is armed earlier; a group
// with nothing due before the loaded horizon is forgotten until the
// loader brings its tasks in.
func (p *partition) sleepUntil(g *groupRun, atMs int64) {
	if g.wakeAt != 0 && g.wakeAt <= atMs {
		return
	}
	if atMs >= p.loadedUntil {
		if g.wakeAt == 0 {
			delete(p.runs, g.key)
		}
		return
	}
	if g.wakeAt != 0 {
		p.wheel.Cancel(g.wake)
	}
	g.wake, g.wakeAt = p.wheel.Add(wheelTime(atMs), timer{run: g}), atMs
}

// woken clears a group's fired wake.
func (g *groupRun) woken() { g.wakeAt = 0 }

// runGroup looks at an idle group's head, its first task in (due, seq)
// order, and starts it if it is due and a delivery slot is free. front
// says the group has reached the front of the ready queue.
func (p *partition) runGroup(g *groupRun, front bool) {
	if g.state != runIdle {
		return
	}
	head, ok, err := p.s.cfg.Store.GroupHead(g.client, g.group)
	if err != nil {
		p.s.fail(err)
		return
	}
	if !ok {
		if !p.rateIdle(g) {
			p.forget(g)
		}
		return
	}
	// The store shows changes as soon as they are in the log, before they
	// are durable; such a head waits until its change is applied.
	if _, changing := p.pending[head.ID]; changing {
		g.state = runWaiting
		p.waitFor(head.ID, func() {
			g.state = runIdle
			p.runGroup(g, false)
		})
		return
	}
	now := p.wallMs()
	if head.Due > now {
		p.sleepUntil(g, head.Due)
		return
	}
	if at, err := p.rateWait(g.client, g.group, now); err != nil || at > 0 {
		if err != nil {
			p.s.fail(err)
			return
		}
		p.rateSleep(g, at)
		return
	}
	if p.used() >= p.slots || (!front && len(p.ready) > 0) {
		g.state = runReady
		p.ready = append(p.ready, readyItem{run: g})
		return
	}
	p.startHead(g, head.ID, now)
}

// forget drops an idle group with nothing in line.
func (p *partition) forget(g *groupRun) {
	if g.wakeAt != 0 {
		p.wheel.Cancel(g.wake)
		g.wakeAt = 0
	}
	delete(p.runs, g.key)
}

// startHead starts a group's due head: its record is read now.
func (p *partition) startHead(g *groupRun, id uint64, nowMs int64) {
	t, ok, err := p.current(id)
	if err == nil && !ok {
		err = fmt.Errorf("%w: group %q of %q orders task %#x, which has no record", store.ErrCorrupt, g.group, g.client, id)
	}
	if err != nil {
		p.s.fail(err)
		return
	}
	f := &flight{id: id, run: g}
	p.flights[id] = f
	g.state = runRunning
	if t.NextAttemptMs > nowMs {
		// A retry pending from before a restart: the head holds its place.
		f.state = flightRetrying
		p.arm(id, t.NextAttemptMs)
		return
	}
	p.deliver(f, t)
}

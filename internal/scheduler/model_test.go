package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// The model test drives a scheduler with random registrations (grouped or
// not, recurring or not, every dispatch mode, due times on both sides of a
// short horizon), updates, cancels, clock advances, acknowledged and failed
// attempts, unblocks and skips. A reference model of the lifecycle predicts
// exactly which delivery attempts must start after each step; the test
// compares them, and the error of every request, with what the scheduler
// did. It covers FIFO per group by (due, id), single in flight, retries
// holding their group, dead-lettering, blocking, recurrence, races of
// update and cancel with firing, and tiering.
func TestSchedulerMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "scheduler-model-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		slots := rapid.SampledFrom([]int{2, 1 << 14}).Draw(rt, "slots") // 2: due tasks wait for a slot
		h := startHarness(rt, dir, func(c *Config) {
			c.MaxDelivering = slots
			c.Horizon, c.LoadInterval = 3*time.Second, time.Second
			c.Retry = FixedRetry{Attempts: modelAttempts, Delay: time.Second}
		})
		defer h.crash() // attempts may be left under way
		m := &model{h: h, tasks: map[uint64]*mTask{}, groups: map[string]*mGroup{}, attempts: map[uint64]*attempt{}}
		rt.Repeat(map[string]func(*rapid.T){
			"register": m.register,
			"update":   m.update,
			"cancel":   m.cancel,
			"advance":  m.advance,
			"resolve":  m.resolve,
			"unblock":  func(rt *rapid.T) { m.unblock(rt, false) },
			"skip":     func(rt *rapid.T) { m.unblock(rt, true) },
		})
	})
}

const modelAttempts = 2

type mState uint8

const (
	mScheduled mState = iota
	mQueued
	mDelivering
	mRetrying
)

type mTask struct {
	id          uint64
	group       string
	due         int64 // ms since epoch
	interval    int64
	mode        storepb.DispatchMode
	attempts    int
	nextAttempt int64
	state       mState
	moved       bool // due changed while queued: re-checked at the head
}

func (t *mTask) gated() bool {
	return t.group != "" && t.mode != storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
}

type mGroup struct {
	queue   []*mTask
	blocked bool
}

type model struct {
	h        *harness
	now      int64
	tasks    map[uint64]*mTask
	groups   map[string]*mGroup
	attempts map[uint64]*attempt // outstanding, by task id
	expected map[string]bool     // attempts the model started this step
}

var modelModes = []storepb.DispatchMode{
	storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR,
	storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
	storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE,
}

func (m *model) group(name string) *mGroup {
	g := m.groups[name]
	if g == nil {
		g = &mGroup{}
		m.groups[name] = g
	}
	return g
}

func (m *model) register(rt *rapid.T) {
	group := rapid.SampledFrom([]string{"", "a", "b"}).Draw(rt, "group")
	delay := rapid.IntRange(0, 8).Draw(rt, "delay_halfseconds") * 500
	interval := rapid.SampledFrom([]int{0, 0, 0, 1500}).Draw(rt, "interval_ms")
	mode := rapid.SampledFrom(modelModes).Draw(rt, "mode")
	v := m.h.register(RegisterRequest{
		Group: group, Delay: time.Duration(delay) * time.Millisecond,
		Interval: time.Duration(interval) * time.Millisecond, Mode: mode,
	})
	m.tasks[v.Task.Id] = &mTask{id: v.Task.Id, group: group, due: m.now + int64(delay), interval: int64(interval), mode: mode}
	m.step(rt)
}

func (m *model) pick(rt *rapid.T, label string) *mTask {
	if len(m.tasks) == 0 {
		rt.Skip("no tasks")
	}
	ids := slices.Sorted(maps.Keys(m.tasks))
	return m.tasks[rapid.SampledFrom(ids).Draw(rt, label)]
}

func (m *model) update(rt *rapid.T) {
	t := m.pick(rt, "update")
	delay := rapid.IntRange(-2, 6).Draw(rt, "new_delay_halfseconds") * 500
	at := epoch.Add(time.Duration(m.now+int64(delay)) * time.Millisecond)
	_, err := m.h.s.Update(context.Background(), Caller{Client: "acme"}, UpdateRequest{ID: t.id, At: &at})
	if t.state == mDelivering {
		m.expectErr(rt, err, ErrInFlight)
		return
	}
	m.expectErr(rt, err, nil)
	t.due, t.attempts, t.nextAttempt = m.now+int64(delay), 0, 0
	switch t.state {
	case mQueued:
		t.moved = true
	case mRetrying:
		m.dequeue(t)
		t.state = mScheduled
	}
	m.step(rt)
}

func (m *model) cancel(rt *rapid.T) {
	t := m.pick(rt, "cancel")
	err := m.h.s.Cancel(context.Background(), Caller{Client: "acme"}, t.id)
	if t.state == mDelivering {
		m.expectErr(rt, err, ErrInFlight)
		return
	}
	m.expectErr(rt, err, nil)
	m.dequeue(t)
	delete(m.tasks, t.id)
	m.step(rt)
}

func (m *model) advance(rt *rapid.T) {
	d := rapid.SampledFrom([]int64{100, 500, 1000, 1500, 4000}).Draw(rt, "advance_ms")
	m.now += d
	m.h.clock.Advance(time.Duration(d) * time.Millisecond)
	m.step(rt)
}

func (m *model) resolve(rt *rapid.T) {
	if len(m.attempts) == 0 {
		rt.Skip("nothing delivering")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.attempts))).Draw(rt, "attempt")
	ok := rapid.Bool().Draw(rt, "ack")
	a := m.attempts[id]
	delete(m.attempts, id)
	t := m.tasks[id]
	if ok {
		a.done(nil)
		m.finish(t)
	} else {
		a.done(errRefused)
		t.attempts++
		if t.attempts < modelAttempts {
			t.state, t.nextAttempt = mRetrying, m.now+1000
		} else {
			if t.gated() && t.mode == storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR {
				m.group(t.group).blocked = true
			}
			m.finish(t)
		}
	}
	m.step(rt)
}

// finish ends an occurrence: a one-shot task is gone, a recurring one goes
// on to its next occurrence.
func (m *model) finish(t *mTask) {
	m.dequeue(t)
	if t.interval == 0 {
		delete(m.tasks, t.id)
		return
	}
	due := t.due + t.interval
	if due < m.now {
		due += (m.now - due + t.interval - 1) / t.interval * t.interval
	}
	t.due, t.attempts, t.nextAttempt, t.state, t.moved = due, 0, 0, mScheduled, false
}

func (m *model) unblock(rt *rapid.T, skip bool) {
	name := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "group")
	g := m.group(name)
	c := Caller{Client: "acme"}
	if skip {
		m.expectErr(rt, m.h.s.Skip(context.Background(), c, "acme", name), blockedErr(g))
		g.blocked = false
		m.step(rt)
		return
	}
	v, err := m.h.s.Unblock(context.Background(), c, "acme", name)
	m.expectErr(rt, err, blockedErr(g))
	if err == nil {
		// The revived head is a new one-shot task at the front of its group.
		head := &mTask{id: v.Task.Id, group: name, due: v.Task.DueMs - epoch.UnixMilli(),
			mode: storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR, state: mQueued}
		m.tasks[head.id] = head
		g.queue = append([]*mTask{head}, g.queue...)
		g.blocked = false
	}
	m.step(rt)
}

func blockedErr(g *mGroup) error {
	if g.blocked {
		return nil
	}
	return ErrNotBlocked
}

func (m *model) dequeue(t *mTask) {
	if !t.gated() {
		return
	}
	g := m.group(t.group)
	g.queue = slices.DeleteFunc(g.queue, func(x *mTask) bool { return x == t })
}

func (m *model) expectErr(rt *rapid.T, got, want error) {
	rt.Helper()
	if !errors.Is(got, want) || (want == nil && got != nil) {
		rt.Fatalf("got error %v, want %v", got, want)
	}
}

// step runs the model to rest and checks that the scheduler started
// exactly the attempts the model did.
func (m *model) step(rt *rapid.T) {
	rt.Helper()

	m.expected = map[string]bool{}
	m.fire()
	for m.runHeads() {
	}
	m.h.settle()
	got := map[string]bool{}
	for {
		select {
		case a := <-m.h.del.attempts:
			key := fmt.Sprintf("%d#%d", a.Task.Id, a.Attempt)
			if got[key] {
				rt.Fatalf("attempt %s started twice", key)
			}
			got[key] = true
			m.attempts[a.Task.Id] = a
			continue
		default:
		}
		break
	}
	if !maps.Equal(got, m.expected) {
		rt.Fatalf("at %dms the scheduler started %v, the model %v\n%s", m.now,
			slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(m.expected)), m.dump())
	}
}

// dump describes the model and the scheduler's fired tasks for a failure
// report.
func (m *model) dump() string {
	s := "model:\n"
	for _, id := range slices.Sorted(maps.Keys(m.tasks)) {
		t := m.tasks[id]
		s += fmt.Sprintf("  task %d group %q due %d state %d attempts %d next %d moved %v mode %v\n",
			id, t.group, t.due, t.state, t.attempts, t.nextAttempt, t.moved, t.mode)
	}
	for name, g := range m.groups {
		var q []uint64
		for _, t := range g.queue {
			q = append(q, t.id)
		}
		s += fmt.Sprintf("  group %q blocked %v queue %v\n", name, g.blocked, q)
	}
	s += "scheduler:\n"
	for _, p := range m.h.s.parts {
		_, _ = m.h.s.call(context.Background(), p, func(done func(result)) {
			for id, f := range p.flights {
				s += fmt.Sprintf("  flight %d state %d\n", id, f.state)
			}
			for k, g := range p.runs {
				s += fmt.Sprintf("  group %q state %d wake %d\n", k, g.state, g.wakeAt-epoch.UnixMilli())
			}
			s += fmt.Sprintf("  partition %d now %d ready %d busy %d loadedUntil %d timers %v\n", p.index,
				p.wallMs()-epoch.UnixMilli(), len(p.ready), p.busy, p.loadedUntil-epoch.UnixMilli(), slices.Collect(maps.Keys(p.timers)))
			done(result{})
		})
	}
	return s
}

// fire moves due tasks into their group queues in (due, id) order, and
// starts ungated ones and due retries of ungated ones.
func (m *model) fire() {
	var due []*mTask
	for _, t := range m.tasks {
		if t.state == mScheduled && t.due <= m.now {
			due = append(due, t)
		}
		if t.state == mRetrying && !t.gated() && t.nextAttempt <= m.now {
			m.deliver(t)
		}
	}
	slices.SortFunc(due, func(a, b *mTask) int { return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.id, b.id)) })
	for _, t := range due {
		if t.gated() {
			t.state = mQueued
			m.group(t.group).queue = append(m.group(t.group).queue, t)
		} else {
			m.deliver(t)
		}
	}
}

// runHeads lets each open group's head go on; it reports whether anything
// changed.
func (m *model) runHeads() bool {
	changed := false
	for _, g := range m.groups {
		if g.blocked || len(g.queue) == 0 {
			continue
		}
		h := g.queue[0]
		switch {
		case h.state == mQueued && h.moved && h.due > m.now:
			g.queue = g.queue[1:]
			h.state, h.moved = mScheduled, false
			changed = true
		case h.state == mQueued:
			m.deliver(h)
			changed = true
		case h.state == mRetrying && h.nextAttempt <= m.now:
			m.deliver(h)
		}
	}
	return changed
}

func (m *model) deliver(t *mTask) {
	t.state, t.moved = mDelivering, false
	m.expected[fmt.Sprintf("%d#%d", t.id, t.attempts+1)] = true
}

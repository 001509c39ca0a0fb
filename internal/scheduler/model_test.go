package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// The model test drives a scheduler with random operations and checks it
// against a reference model of the task lifecycle that predicts exactly
// which delivery attempts must start after each step. The reference runs
// each ordered group's tasks in (due, seq) order, one at a time, whatever
// order they were registered, updated, revived or replayed in.
//
// Operations: registrations (grouped or not, recurring or not, every
// dispatch mode, due in the past, now, or on either side of a short
// horizon; recurring by interval or by a cron schedule), registrations
// with a replace key (debounced or not) that replace a waiting task or
// create one, updates of the due time (into the past too), the cron
// schedule or the payload, cancels, clock advances, acknowledged and
// failed attempts, unblock, skip, replay and deletion of dead letters,
// restarts after a kill, power losses at rest, and power losses right
// after an acknowledgement, before its outcome may be durable. Group "b"
// is rate limited throughout. The store is an in-memory filesystem
// that keeps only what was synced when the power goes.
func TestSchedulerMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := &harness{t: rt, dir: "/data", fs: store.NewMemFS(), clock: newFakeClock(), del: newRecorder(), tune: func(c *Config) {
			c.Horizon, c.LoadInterval = 3*time.Second, time.Second
			c.Retry = FixedRetry{Attempts: modelAttempts, Delay: time.Second}
			c.GroupRate = func(_, group string) RateLimit {
				if group == "b" {
					return modelRate
				}
				return RateLimit{}
			}
		}}
		h.open()
		defer h.crash() // attempts may be left under way
		m := &model{h: h, tasks: map[uint64]*mTask{}, groups: map[string]*mGroup{}, dls: map[uint64]*mDL{}, attempts: map[uint64]*attempt{}}
		rt.Repeat(map[string]func(*rapid.T){
			"register": m.register,
			"replace":  m.replace,
			"update":   m.update,
			"cancel":   m.cancel,
			"advance":  m.advance,
			"resolve":  m.resolve,
			"unblock":  func(rt *rapid.T) { m.unblock(rt, false) },
			"skip":     func(rt *rapid.T) { m.unblock(rt, true) },
			"replay":   m.replay,
			"deleteDL": m.deleteDL,
			"crash":    m.crash,
		})
	})
}

const modelAttempts = 2

// modelRate limits group "b": at most two attempts start in any 3 s.
var modelRate = RateLimit{Max: 2, Per: 3 * time.Second}

// modelCron fires every 3 s of local time in a zone 5:45 ahead of UTC:
// every multiple of modelCronMs since epoch.
const (
	modelCron   = "*/3 * * * * *"
	modelCronMs = 3000
)

type mState uint8

const (
	mWaiting    mState = iota // scheduled, due, or (ungrouped) waiting for a retry
	mDelivering               // an attempt is under way
	mRetrying                 // a group's head, waiting for its next attempt
)

type mTask struct {
	id, seq     uint64
	group       string
	due         int64 // ms since epoch
	interval    int64
	cron        bool // every modelCronMs, by the schedule modelCron
	replaceKey  string
	created     int64 // when registered, ms since epoch: a debounce's max wait counts from here
	mode        storepb.DispatchMode
	attempts    int
	nextAttempt int64 // 0: none
	startedAt   int64 // when the attempt under way started
	state       mState
}

func (t *mTask) gated() bool {
	return t.group != "" && t.mode != storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
}

// wake is when the task needs attention: its due time, or its retry.
func (t *mTask) wake() int64 { return max(t.due, t.nextAttempt) }

type mGroup struct {
	running *mTask  // started head: delivering or retrying
	blocked uint64  // the dead letter blocking it; 0: not blocked
	starts  []int64 // attempts whose outcome was recorded: what a rate limit counts
}

// rateAllows reports whether group name's rate limit lets an attempt
// start now: fewer than Max recorded starts within the last Per.
func (m *model) rateAllows(name string) bool {
	if name != "b" {
		return true
	}
	starts := m.group(name).starts
	return len(starts) < modelRate.Max || starts[len(starts)-modelRate.Max]+modelRate.Per.Milliseconds() <= m.now
}

// recorded notes that the outcome of t's attempt is durable: its start
// counts for its group's rate limit.
func (m *model) recorded(t *mTask) {
	if t.gated() {
		g := m.group(t.group)
		g.starts = append(g.starts, t.startedAt)
	}
}

// mDL is a dead letter; id is learned from the scheduler once it exists.
type mDL struct {
	id     uint64
	task   mTask // the occurrence that failed
	blocks bool
}

type model struct {
	h        *harness
	now      int64
	tasks    map[uint64]*mTask
	groups   map[string]*mGroup
	dls      map[uint64]*mDL     // by id; 0 while the scheduler's id is not known
	newDLs   []*mDL              // dead-lettered this step, ids not known yet
	attempts map[uint64]*attempt // outstanding, by task id
	expected map[string]bool     // attempts the model started this step
}

var modelModes = []storepb.DispatchMode{
	storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR,
	storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
	storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE,
}

var acme = Caller{Client: "acme"}

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
	delay := rapid.IntRange(-4, 8).Draw(rt, "delay_halfseconds") * 500
	interval := rapid.SampledFrom([]int{0, 0, 0, 1500, -1}).Draw(rt, "interval_ms (-1: cron)")
	mode := rapid.SampledFrom(modelModes).Draw(rt, "mode")
	req := RegisterRequest{
		Group: group, At: epoch.Add(time.Duration(m.now+int64(delay)) * time.Millisecond),
		Interval: time.Duration(interval) * time.Millisecond, Mode: mode,
	}
	t := &mTask{group: group, due: m.now + int64(delay), interval: int64(interval), mode: mode}
	if interval < 0 {
		req.Interval, req.Cron, req.TimeZone = 0, modelCron, "Asia/Kathmandu"
		t.interval, t.cron = 0, true
		t.due = ceilTo(t.due, modelCronMs) // the first occurrence at or after
	}
	v := m.h.register(req)
	t.id, t.seq = v.Task.Id, v.Task.Id
	if got := v.Task.DueMs - epoch.UnixMilli(); got != t.due {
		rt.Fatalf("registered task %d due %d, model %d", t.id, got, t.due)
	}
	m.tasks[t.id] = t
	m.step(rt)
}

// ceilTo rounds ms up to a multiple of step.
func ceilTo(ms, step int64) int64 {
	q := ms / step
	if q*step < ms {
		q++
	}
	return q * step
}

// replace registers with a replace key, debounced or not: the model
// replaces its waiting task with the key in the same group, if any, and
// otherwise expects a new task.
func (m *model) replace(rt *rapid.T) {
	group := rapid.SampledFrom([]string{"", "a", "b"}).Draw(rt, "group")
	key := rapid.SampledFrom([]string{"k1", "k2"}).Draw(rt, "replace_key")
	mode := rapid.SampledFrom(modelModes).Draw(rt, "mode")
	debounce := int64(rapid.SampledFrom([]int{0, 1000, 2000}).Draw(rt, "debounce_ms"))
	req := RegisterRequest{Client: "acme", Group: group, Payload: payload("replacing"), Mode: mode, ReplaceKey: key}
	var due, maxWait int64
	if debounce > 0 {
		maxWait = int64(rapid.SampledFrom([]int{0, 1500, 3000}).Draw(rt, "max_wait_ms"))
		req.Debounce, req.MaxWait = time.Duration(debounce)*time.Millisecond, time.Duration(maxWait)*time.Millisecond
	} else {
		due = m.now + int64(rapid.IntRange(-4, 8).Draw(rt, "delay_halfseconds")*500)
		req.At = epoch.Add(time.Duration(due) * time.Millisecond)
	}
	// Two tasks may wait with the key: one whose attempt a restart
	// forgot, and one created while that attempt was under way. The
	// oldest (lowest id) is replaced.
	var target *mTask
	for _, t := range m.tasks {
		if t.group == group && t.replaceKey == key && t.state == mWaiting && t.attempts == 0 && t.nextAttempt == 0 &&
			(target == nil || t.id < target.id) {
			target = t
		}
	}
	created := m.now
	if target != nil {
		created = target.created
	}
	if debounce > 0 {
		due = m.now + debounce
		if maxWait > 0 {
			due = min(due, created+maxWait)
		}
	}
	v, wasCreated, err := m.h.s.Register(context.Background(), req)
	m.expectErr(rt, err, nil)
	switch {
	case target != nil && (wasCreated || v.Task.Id != target.id):
		rt.Fatalf("registration with key %q of group %q: created %v task %d, want task %d replaced", key, group, wasCreated, v.Task.Id, target.id)
	case target == nil && !wasCreated:
		rt.Fatalf("registration with key %q of group %q replaced task %d; the model has none waiting", key, group, v.Task.Id)
	case v.Task.DueMs-epoch.UnixMilli() != due:
		rt.Fatalf("task %d due %d, model %d", v.Task.Id, v.Task.DueMs-epoch.UnixMilli(), due)
	}
	if target == nil {
		target = &mTask{id: v.Task.Id, seq: v.Task.Id, group: group, mode: mode, replaceKey: key, created: m.now}
		m.tasks[target.id] = target
	}
	target.due = due
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
	req := UpdateRequest{ID: t.id}
	newDue := rapid.Bool().Draw(rt, "new_due")
	toCron := rapid.IntRange(0, 3).Draw(rt, "to_cron") == 0
	delay := int64(rapid.IntRange(-4, 6).Draw(rt, "new_delay_halfseconds") * 500)
	if newDue {
		at := epoch.Add(time.Duration(m.now+delay) * time.Millisecond)
		req.At = &at
	} else {
		req.Payload = payload("changed")
	}
	if toCron {
		cron := modelCron
		req.Cron, req.TimeZone = &cron, "Asia/Kathmandu"
	}
	_, err := m.h.s.Update(context.Background(), acme, req)
	switch {
	case t.state == mDelivering:
		m.expectErr(rt, err, ErrInFlight)
		return
	case toCron && t.replaceKey != "":
		m.expectErr(rt, err, ErrInvalid)
		return
	}
	m.expectErr(rt, err, nil)
	if newDue {
		t.due = m.now + delay
	}
	if toCron {
		// The first occurrence at or after the new due time, or now.
		base := m.now
		if newDue {
			base = t.due
		}
		t.due, t.cron, t.interval = ceilTo(base, modelCronMs), true, 0
	}
	if newDue || toCron {
		// A new occurrence: a retrying head gives up its place.
		t.attempts, t.nextAttempt = 0, 0
		m.release(t)
	}
	m.step(rt)
}

func (m *model) cancel(rt *rapid.T) {
	t := m.pick(rt, "cancel")
	err := m.h.s.Cancel(context.Background(), acme, t.id)
	if t.state == mDelivering {
		m.expectErr(rt, err, ErrInFlight)
		return
	}
	m.expectErr(rt, err, nil)
	m.release(t)
	delete(m.tasks, t.id)
	m.step(rt)
}

// release makes a retrying head give up its group.
func (m *model) release(t *mTask) {
	if t.state == mRetrying {
		m.group(t.group).running = nil
	}
	t.state = mWaiting
}

func (m *model) advance(rt *rapid.T) {
	d := rapid.SampledFrom([]int64{100, 500, 1000, 1500, 4000}).Draw(rt, "advance_ms")
	m.now += d
	m.h.clock.Advance(time.Duration(d) * time.Millisecond)
	m.step(rt)
}

func (m *model) pickAttempt(rt *rapid.T) (*attempt, *mTask) {
	if len(m.attempts) == 0 {
		rt.Skip("nothing delivering")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.attempts))).Draw(rt, "attempt")
	a := m.attempts[id]
	delete(m.attempts, id)
	return a, m.tasks[id]
}

func (m *model) resolve(rt *rapid.T) {
	a, t := m.pickAttempt(rt)
	m.recorded(t)
	if rapid.Bool().Draw(rt, "ack") {
		a.done(nil)
		m.finish(t)
	} else {
		a.done(errRefused)
		m.failed(t)
	}
	m.step(rt)
}

func (m *model) failed(t *mTask) {
	t.attempts++
	if t.attempts < modelAttempts {
		t.nextAttempt = m.now + 1000
		if t.gated() {
			t.state = mRetrying // it keeps its group
		} else {
			t.state = mWaiting
		}
		return
	}
	dl := &mDL{task: *t, blocks: t.gated() && t.mode == storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR}
	m.newDLs = append(m.newDLs, dl)
	m.finish(t)
	if dl.blocks {
		m.group(t.group).blocked = 1 // the dead letter's id once known
	}
}

// finish ends an occurrence: a one-shot task is gone, a recurring one goes
// on to its next occurrence.
func (m *model) finish(t *mTask) {
	if t.gated() {
		m.group(t.group).running = nil
	}
	t.state = mWaiting
	if t.cron {
		// The next multiple after the due time, or the first at or after now.
		due := ceilTo(t.due+1, modelCronMs)
		if due < m.now {
			due = ceilTo(m.now, modelCronMs)
		}
		t.due, t.attempts, t.nextAttempt = due, 0, 0
		return
	}
	if t.interval == 0 {
		delete(m.tasks, t.id)
		return
	}
	due := t.due + t.interval
	if due < m.now {
		due += (m.now - due + t.interval - 1) / t.interval * t.interval
	}
	t.due, t.attempts, t.nextAttempt = due, 0, 0
}

func (m *model) unblock(rt *rapid.T, skip bool) {
	name := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "group")
	g := m.group(name)
	want := ErrNotBlocked
	if g.blocked != 0 {
		want = nil
	}
	if skip {
		m.expectErr(rt, m.h.s.Skip(context.Background(), acme, "acme", name), want)
		if want == nil {
			m.dls[g.blocked].blocks = false
			g.blocked = 0
		}
		m.step(rt)
		return
	}
	v, err := m.h.s.Unblock(context.Background(), acme, "acme", name)
	m.expectErr(rt, err, want)
	if err == nil {
		m.revive(rt, m.dls[g.blocked], v, true)
		g.blocked = 0
	}
	m.step(rt)
}

// revive makes the task a dead letter was revived as: in its old place
// (unblock), or due now as a new acceptance (replay).
func (m *model) revive(rt *rapid.T, dl *mDL, v TaskView, keepPlace bool) {
	t := dl.task
	t.id, t.interval, t.cron, t.attempts, t.nextAttempt, t.state = v.Task.Id, 0, false, 0, 0, mWaiting
	t.replaceKey = ""
	if !keepPlace {
		t.seq, t.due = v.Task.Id, m.now
	}
	if v.Task.Seq != t.seq || v.Task.DueMs-epoch.UnixMilli() != t.due {
		rt.Fatalf("revived dead letter %d as seq %d due %d, want seq %d due %d", dl.id, v.Task.Seq, v.Task.DueMs-epoch.UnixMilli(), t.seq, t.due)
	}
	m.tasks[t.id] = &t
	delete(m.dls, dl.id)
}

func (m *model) pickDL(rt *rapid.T) *mDL {
	if len(m.dls) == 0 {
		rt.Skip("no dead letters")
	}
	return m.dls[rapid.SampledFrom(slices.Sorted(maps.Keys(m.dls))).Draw(rt, "dead letter")]
}

func (m *model) replay(rt *rapid.T) {
	dl := m.pickDL(rt)
	v, err := m.h.s.Replay(context.Background(), acme, dl.id)
	m.expectErr(rt, err, nil)
	if dl.blocks {
		m.group(dl.task.group).blocked = 0
	}
	m.revive(rt, dl, v, dl.blocks)
	m.step(rt)
}

func (m *model) deleteDL(rt *rapid.T) {
	dl := m.pickDL(rt)
	m.expectErr(rt, m.h.s.DeleteDeadLetter(context.Background(), acme, dl.id), nil)
	if dl.blocks {
		m.group(dl.task.group).blocked = 0
	}
	delete(m.dls, dl.id)
	m.step(rt)
}

// crash kills the scheduler or cuts its power, at rest or right after
// acknowledging an attempt.
func (m *model) crash(rt *rapid.T) {
	switch rapid.IntRange(0, 2).Draw(rt, "crash") {
	case 0:
		m.restart(rt, false)
	case 1:
		m.restart(rt, true)
	default:
		m.ackThenPowerOff(rt)
	}
}

// restart kills the scheduler, or cuts its power, at rest: everything it
// acknowledged or applied was durable, so only the attempts under way are
// lost, and they start again.
func (m *model) restart(rt *rapid.T, powerLoss bool) {
	if powerLoss {
		m.h.powerLoss()
	} else {
		m.h.crash()
		m.h.open()
	}
	m.restarted()
	m.step(rt)
}

// restarted forgets what was under way: attempts start again from the
// durable state, a retrying head holds its group again once it is due.
func (m *model) restarted() {
	clear(m.attempts)
	for _, t := range m.tasks {
		t.state = mWaiting
	}
	for _, g := range m.groups {
		g.running = nil
	}
}

// ackThenPowerOff acknowledges an attempt and cuts the power before,
// or just after, its outcome is durable. Whichever happened, the group's
// next task must not have started unless the outcome survived: if it had,
// the receiver would see the group's next task before a repeat of the
// acknowledged one.
func (m *model) ackThenPowerOff(rt *rapid.T) {
	a, t := m.pickAttempt(rt)
	before := *t
	a.done(nil)
	for range rapid.IntRange(0, 3).Draw(rt, "round trips before the power goes") {
		m.h.roundTrip()
	}
	m.h.del.cut.Store(true)
	startedSince := m.h.del.drain()
	m.h.powerLoss()

	stored, err := m.h.s.Get(context.Background(), acme, t.id)
	survived := errors.Is(err, ErrNotFound) || (err == nil && stored.Task.DueMs-epoch.UnixMilli() != before.due)
	if !survived && err != nil {
		rt.Fatalf("task %d after the power loss: %v", t.id, err)
	}
	for _, b := range startedSince {
		if other := m.tasks[b.Task.Id]; !survived && other != nil && other != t && t.gated() && other.group == t.group {
			rt.Fatalf("task %d of group %q started while the outcome of task %d was not durable", other.id, t.group, t.id)
		}
	}
	m.restarted()
	if survived {
		m.recorded(t)
		m.finish(t)
	}
	m.step(rt)
}

func (m *model) expectErr(rt *rapid.T, got, want error) {
	rt.Helper()
	if !errors.Is(got, want) || (want == nil && got != nil) {
		rt.Fatalf("got error %v, want %v", got, want)
	}
}

// step runs the model to rest and checks that the scheduler started
// exactly the attempts the model did, and holds the same dead letters.
func (m *model) step(rt *rapid.T) {
	rt.Helper()
	m.expected = map[string]bool{}
	for m.run() {
	}
	m.h.settle()
	got := map[string]bool{}
	for _, a := range m.h.del.drain() {
		key := fmt.Sprintf("%d#%d", a.Task.Id, a.Attempt)
		if got[key] {
			rt.Fatalf("attempt %s started twice", key)
		}
		got[key] = true
		m.attempts[a.Task.Id] = a
	}
	if !maps.Equal(got, m.expected) {
		rt.Fatalf("at %dms the scheduler started %v, the model %v\n%s", m.now,
			slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(m.expected)), m.dump())
	}
	m.checkDeadLetters(rt)
}

// run starts what the model says can start now; it reports whether
// anything changed.
func (m *model) run() bool {
	changed := false
	byGroup := map[string][]*mTask{}
	for _, t := range m.tasks {
		switch {
		case t.gated():
			byGroup[t.group] = append(byGroup[t.group], t)
		case t.state == mWaiting && t.wake() <= m.now:
			m.deliver(t)
			changed = true
		}
	}
	for name, tasks := range byGroup {
		g := m.group(name)
		if g.blocked != 0 {
			continue
		}
		if !m.rateAllows(name) {
			continue
		}
		if h := g.running; h != nil {
			if h.state == mRetrying && h.nextAttempt <= m.now {
				m.deliver(h)
				changed = true
			}
			continue
		}
		head := slices.MinFunc(tasks, func(a, b *mTask) int { return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.seq, b.seq)) })
		if head.due > m.now {
			continue
		}
		g.running = head
		changed = true
		if head.nextAttempt > m.now {
			head.state = mRetrying // a retry pending from before a restart
			continue
		}
		m.deliver(head)
	}
	return changed
}

func (m *model) deliver(t *mTask) {
	t.state, t.startedAt = mDelivering, m.now
	m.expected[fmt.Sprintf("%d#%d", t.id, t.attempts+1)] = true
}

// checkDeadLetters learns the ids of this step's dead letters and checks
// that the scheduler holds exactly the model's, blocking or not.
func (m *model) checkDeadLetters(rt *rapid.T) {
	rt.Helper()
	list, _, err := m.h.s.DeadLetters(context.Background(), acme, "acme", 0, 1000)
	if err != nil {
		rt.Fatal(err)
	}
	for _, d := range list {
		if m.dls[d.Id] != nil {
			continue
		}
		i := slices.IndexFunc(m.newDLs, func(n *mDL) bool {
			return n.task.id == d.Task.Id && n.task.due == d.Task.DueMs-epoch.UnixMilli()
		})
		if i < 0 {
			rt.Fatalf("unexpected dead letter %d of task %d", d.Id, d.Task.Id)
		}
		dl := m.newDLs[i]
		m.newDLs = slices.Delete(m.newDLs, i, i+1)
		dl.id = d.Id
		m.dls[d.Id] = dl
		if dl.blocks {
			m.group(dl.task.group).blocked = d.Id
		}
	}
	if len(m.newDLs) > 0 || len(list) != len(m.dls) {
		rt.Fatalf("dead letters: scheduler %d, model %d (+%d expected)", len(list), len(m.dls), len(m.newDLs))
	}
	for _, d := range list {
		if d.BlocksGroup != m.dls[d.Id].blocks {
			rt.Fatalf("dead letter %d blocks its group: %v, model %v", d.Id, d.BlocksGroup, m.dls[d.Id].blocks)
		}
	}
}

// dump describes the model and the scheduler for a failure report.
func (m *model) dump() string {
	s := "model:\n"
	for _, id := range slices.Sorted(maps.Keys(m.tasks)) {
		t := m.tasks[id]
		s += fmt.Sprintf("  task %d seq %d group %q due %d state %d attempts %d next %d mode %v\n",
			id, t.seq, t.group, t.due, t.state, t.attempts, t.nextAttempt, t.mode)
	}
	for name, g := range m.groups {
		s += fmt.Sprintf("  group %q blocked %d running %v\n", name, g.blocked, g.running != nil)
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

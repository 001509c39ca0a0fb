package scheduler

import (
	"slices"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A rate limit bounds an ordered group's delivery attempts on top of
// one in flight: at most Max attempts start in any Per. When the group's
// head (or its retry) is due but the limit is reached, the group waits
// until the oldest counted start leaves the window, and keeps its order:
// nothing else of the group runs meanwhile.
//
// The times come from the leader: an attempt's start time (when it was
// handed to the deliverer, see send) is stored in the group's record with
// the attempt's outcome, in the same command, so every replica and any
// later leader counts the same starts. An attempt cut short by a crash
// has no outcome and is not counted; it is made again, and counted then.
// A group whose tasks are all done keeps its record, with these times,
// until they leave the window (or, after a restart, until the group is
// used again).

// RateLimit bounds a group's delivery attempts: at most Max start in any
// Per. A zero Max or Per means no limit.
type RateLimit struct {
	Max int
	Per time.Duration
}

// MaxRateLimit bounds RateLimit.Max: the record keeps that many times.
const MaxRateLimit = 1000

func (l RateLimit) on() bool { return l.Max > 0 && l.Per > 0 }

func (p *partition) groupRate(client, group string) RateLimit {
	if p.s.cfg.GroupRate == nil {
		return RateLimit{}
	}
	return p.s.cfg.GroupRate(client, group)
}

// rateWait returns when an ordered group may start its next attempt
// under its rate limit, or 0 if it may now.
func (p *partition) rateWait(client, group string, nowMs int64) (int64, error) {
	l := p.groupRate(client, group)
	if !l.on() {
		return 0, nil
	}
	g, release, err := p.groupRecord(client, group)
	if err != nil {
		return 0, err
	}
	defer release()
	return nextAllowed(g.rec.RecentStartsMs, l, nowMs), nil
}

// nextAllowed is when the next attempt may start after starts
// (ascending), or 0 if it may at nowMs.
func nextAllowed(starts []int64, l RateLimit, nowMs int64) int64 {
	if len(starts) < l.Max {
		return 0
	}
	if at := starts[len(starts)-l.Max] + l.Per.Milliseconds(); at > nowMs {
		return at
	}
	return 0
}

// noteStart adds an ordered group's attempt, whose outcome is being
// decided, to the starts its rate limit counts, keeping only those it
// can still count; without a limit it drops any left from one.
func (p *partition) noteStart(f *flight, t *storepb.Task) error {
	if f.run == nil {
		return nil
	}
	l := p.groupRate(t.Client, t.Group)
	g, release, err := p.groupRecord(t.Client, t.Group)
	if err != nil {
		return err
	}
	switch {
	case l.on():
		starts := append(slices.Clone(g.rec.RecentStartsMs), f.startedMs)
		slices.Sort(starts)
		window := starts[len(starts)-1] - l.Per.Milliseconds()
		first := max(len(starts)-l.Max, 0)
		for first < len(starts) && starts[first] <= window {
			first++
		}
		g.rec.RecentStartsMs = starts[first:]
	case len(g.rec.RecentStartsMs) > 0:
		g.rec.RecentStartsMs = nil
	default:
		release()
		return nil
	}
	p.saveGroup(g)
	p.then(func(error) { release() })
	return nil
}

// rateSleep wakes a group whose rate limit holds it at atMs. Unlike a due
// time, a wait is armed however far off it is: the loader, which brings
// due tasks in, would not look at a head that is already due.
func (p *partition) rateSleep(g *groupRun, atMs int64) {
	if g.wakeAt != 0 && g.wakeAt <= atMs {
		return
	}
	if g.wakeAt != 0 {
		p.wheel.Cancel(g.wake)
	}
	g.wake, g.wakeAt = p.wheel.Add(wheelTime(atMs), timer{run: g}), atMs
}

// rateIdle handles an ordered group left with no tasks: while its
// record still holds starts its limit counts, the group stays known and
// wakes when they have left the window; then the record is dropped, by a
// decision of its own. It reports whether the group stays.
func (p *partition) rateIdle(g *groupRun) bool {
	rec, release, err := p.groupRecord(g.client, g.group)
	if err != nil {
		p.s.fail(err)
		return false
	}
	defer release()
	starts := rec.rec.RecentStartsMs
	if len(starts) == 0 || rec.rec.Tasks > 0 {
		return false
	}
	if until := p.startsCountUntil(g.client, g.group, starts); until > p.wallMs() {
		p.rateSleep(g, until)
		return true
	}
	// Not now: this may run while decisions are being proposed.
	p.inbox.post(func() { p.dropStarts(g.client, g.group) })
	return false
}

// startsCountUntil is when the latest of an ordered group's starts
// leaves its rate limit's window; 0 without a limit.
func (p *partition) startsCountUntil(client, group string, starts []int64) int64 {
	l := p.groupRate(client, group)
	if !l.on() || len(starts) == 0 {
		return 0
	}
	return starts[len(starts)-1] + l.Per.Milliseconds()
}

// dropStarts forgets the starts of an ordered group with no tasks once
// its rate limit no longer counts them, and with them its record.
func (p *partition) dropStarts(client, group string) {
	shard := p.s.cfg.Store.GroupShard(client, group)
	if p.stopping || !p.leads(shard) {
		return
	}
	rec, release, err := p.groupRecord(client, group)
	if err != nil {
		p.s.fail(err)
		return
	}
	starts := rec.rec.RecentStartsMs
	if len(starts) == 0 || rec.rec.Tasks > 0 || p.startsCountUntil(client, group, starts) > p.wallMs() {
		release()
		return
	}
	p.begin(shard, storepb.Op_OP_SWEEP)
	rec.rec.RecentStartsMs = nil
	p.saveGroup(rec)
	p.then(func(error) { release() })
}

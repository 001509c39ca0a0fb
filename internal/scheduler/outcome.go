package scheduler

import (
	"errors"
	"time"

	"github.com/boomerangd/boomerang/internal/sanitize"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// MaxErrorLen bounds the error text kept with a task or dead letter.
const MaxErrorLen = 512

// delivered records the outcome of an attempt. Its group does not go on
// until the outcome is durable.
func (p *partition) delivered(f *flight, derr error) {
	if p.flights[f.id] != f || f.state != flightDelivering {
		return // its shard is no longer led here
	}
	p.busy--
	p.s.deliveries.Add(-1)
	if errors.Is(derr, ErrNotAttempted) {
		p.refused(f)
		return
	}
	if derr == nil {
		p.s.counters.delivered.Add(1)
	} else {
		p.s.counters.failed.Add(1)
	}
	f.state = flightSettling
	t := f.task
	now := p.wall()
	p.begin(store.ShardOf(t.Id), storepb.Op_OP_OUTCOME)
	p.cur.linger = f.run == nil // a group's outcome holds up its next task
	err := p.noteStart(f, t)
	switch {
	case err != nil:
	case derr == nil:
		err = p.succeeded(f, t, now)
	default:
		msg := sanitize.Text(derr.Error(), MaxErrorLen)
		attempts := t.Attempts + 1
		if delay, again := p.s.cfg.Retry.Next(t, attempts, derr); again {
			err = p.retrying(f, t, attempts, msg, now.Add(delay))
		} else {
			err = p.deadLetter(f, t, attempts, msg, now)
		}
	}
	if err != nil {
		p.unrecorded(f, err)
	}
}

// refused puts back an attempt that never reached its endpoint: nothing
// changed, so nothing is written, and no attempt is counted.
func (p *partition) refused(f *flight) {
	at := p.wall().Add(p.s.cfg.RefusalDelay).UnixMilli()
	f.task = nil
	if f.run == nil {
		delete(p.flights, f.id)
	} else {
		f.state = flightRetrying
	}
	p.arm(f.id, at)
}

// unrecorded handles an outcome whose record the store refused. It cannot
// come from what the receiver said (that is sanitized), so it is a bug;
// the attempt is treated as not made, so the task keeps its place and
// every other task goes on.
func (p *partition) unrecorded(f *flight, err error) {
	p.s.cfg.Logger.Error("delivery outcome could not be recorded; the task will be delivered again",
		"task", f.id, "err", err)
	p.s.counters.unrecorded.Add(1)
	p.abandon()
	p.refused(f)
}

func (p *partition) succeeded(f *flight, t *storepb.Task, now time.Time) error {
	next := nextOccurrence(t, now)
	if err := p.commitOutcome(t, next); err != nil {
		return err
	}
	p.then(func(err error) {
		if err == nil {
			p.finished(Finished{Task: t, Delivered: true})
			p.settle(f, next)
		}
	})
	return nil
}

// finished tells Config.OnFinished of a final outcome.
func (p *partition) finished(f Finished) {
	if p.s.cfg.OnFinished != nil {
		p.s.cfg.OnFinished(f)
	}
}

// retrying records a failed attempt with attempts left. A group's head
// keeps holding its group while it waits; any other task waits in the
// wheel (or the store) like a scheduled one.
func (p *partition) retrying(f *flight, t *storepb.Task, attempts uint32, msg string, at time.Time) error {
	upd := clone(t)
	upd.Attempts, upd.LastError = attempts, msg
	upd.NextAttemptMs = at.UnixMilli()
	upd.UpdatedMs = p.wallMs()
	if err := p.commitOutcome(t, upd); err != nil {
		return err
	}
	p.then(func(err error) {
		if err != nil {
			return
		}
		if f.run == nil {
			p.settle(f, upd)
			return
		}
		f.state, f.task = flightRetrying, nil
		p.arm(f.id, upd.NextAttemptMs)
	})
	return nil
}

// nextOccurrence is a recurring task's next occurrence after a delivered or
// dead-lettered one, or nil for a one-shot task (or a cron schedule with
// no more occurrences). By interval or by cron schedule, it follows the previous
// due time. Occurrences already in the past are skipped up to the first
// one at or after now: a task that missed several (during downtime, or
// behind a receiver slower than its interval) fires once, not in a burst.
func nextOccurrence(t *storepb.Task, now time.Time) *storepb.Task {
	due, ok := nextDue(t, now)
	if !ok {
		return nil
	}
	n := clone(t)
	n.DueMs, n.Attempts, n.NextAttemptMs, n.LastError = due, 0, 0, ""
	n.Fires++
	n.UpdatedMs = now.UnixMilli()
	return n
}

// nextDue is when a recurring task's next occurrence is due.
func nextDue(t *storepb.Task, now time.Time) (int64, bool) {
	if t.Cron != "" {
		return cronNext(t, now)
	}
	if t.IntervalMs <= 0 {
		return 0, false
	}
	due := t.DueMs + t.IntervalMs
	if nowMs := now.UnixMilli(); due < nowMs {
		missed := (nowMs - due + t.IntervalMs - 1) / t.IntervalMs
		due += missed * t.IntervalMs
	}
	return due, true
}

// commitOutcome journals the change from t to next (nil: delete t, and
// count it out of its group). The task keeps its idempotency key, which
// expires on its own.
func (p *partition) commitOutcome(t, next *storepb.Task) error {
	var release func()
	if next == nil {
		if err := p.cmd().DeleteTask(t); err != nil {
			return err
		}
		var err error
		if release, err = p.countTask(t, -1); err != nil {
			return err
		}
	} else {
		if err := p.cmd().ReplaceTask(t, next); err != nil {
			return err
		}
		release = func() {}
	}
	dec := p.decide(t.Id, next)
	p.then(func(error) {
		p.undo(dec)
		release()
	})
	return nil
}

// deadLetter moves a failed occurrence to the dead letter queue. A
// recurring task goes on to its next occurrence; a BLOCK_ON_ERROR group is
// blocked with the dead letter as its head.
func (p *partition) deadLetter(f *flight, t *storepb.Task, attempts uint32, msg string, now time.Time) error {
	id, err := p.allocID(store.ShardOf(t.Id))
	if err != nil {
		return err
	}
	occurrence := clone(t)
	occurrence.Attempts, occurrence.LastError, occurrence.NextAttemptMs = attempts, msg, 0
	dl := &storepb.DeadLetter{
		Id:          id,
		Task:        occurrence,
		LastError:   msg,
		Attempts:    attempts,
		FailedMs:    now.UnixMilli(),
		BlocksGroup: f.run != nil && t.Mode == storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
	}
	if err := p.cmd().PutDeadLetter(dl); err != nil {
		return err
	}
	p.decideDL(dl.Id, nil, dl)
	release := func() {}
	if dl.BlocksGroup {
		g, rel, err := p.groupRecord(t.Client, t.Group)
		if err != nil {
			return err
		}
		g.rec.BlockedTask, g.rec.BlockedSinceMs = dl.Id, now.UnixMilli()
		p.saveGroup(g)
		release = rel
	}
	next := nextOccurrence(t, now)
	if err := p.commitOutcome(t, next); err != nil {
		return err
	}
	p.then(func(err error) {
		release()
		if err != nil {
			return
		}
		p.finished(Finished{Task: occurrence, DeadLetter: dl.Id, Error: dl.LastError})
		if dl.BlocksGroup {
			p.block(f)
		}
		p.settle(f, next)
	})
	return nil
}

// block marks a dead-lettered head's group blocked: settle then leaves it.
func (p *partition) block(f *flight) {
	f.run.state = runBlocked
	p.blocked++
	f.run = nil
}

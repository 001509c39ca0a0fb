package scheduler

import (
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// delivered records the outcome of an attempt. The group gate stays shut
// until the outcome is durable.
func (p *partition) delivered(f *flight, derr error) {
	if f.state != flightDelivering {
		return
	}
	p.s.deliveries.Add(-1)
	if derr == nil {
		p.s.counters.delivered.Add(1)
	} else {
		p.s.counters.failed.Add(1)
	}
	f.state = flightSettling
	t := f.task
	now := p.now()
	if derr == nil {
		p.succeeded(f, t, now)
		return
	}
	attempts := t.Attempts + 1
	if delay, again := p.s.cfg.Retry.Next(t, attempts, derr); again {
		upd := clone(t)
		upd.Attempts, upd.LastError = attempts, derr.Error()
		upd.NextAttemptMs = now.Add(delay).UnixMilli()
		upd.UpdatedMs = now.UnixMilli()
		p.commitOutcome(f, t, upd, func() {
			f.state, f.task = flightRetrying, upd
			p.arm(f.id, upd.NextAttemptMs)
		})
		return
	}
	p.deadLetter(f, t, attempts, derr, now)
}

func (p *partition) succeeded(f *flight, t *storepb.Task, now time.Time) {
	next := nextOccurrence(t, now)
	p.commitOutcome(f, t, next, func() {
		p.finished(Finished{Task: t, Delivered: true})
		p.release(f, true)
		if next != nil {
			p.schedule(next)
		}
	})
}

// finished tells Config.OnFinished of a final outcome.
func (p *partition) finished(f Finished) {
	if p.s.cfg.OnFinished != nil {
		p.s.cfg.OnFinished(f)
	}
}

// nextOccurrence is a recurring task's next occurrence after a delivered or
// dead-lettered one, or nil for a one-shot task. It follows the previous
// due time. Occurrences already in the past are skipped up to the first
// one at or after now: a task that missed several (during downtime, or
// behind a receiver slower than its interval) fires once, not in a burst.
func nextOccurrence(t *storepb.Task, now time.Time) *storepb.Task {
	if t.IntervalMs <= 0 {
		return nil
	}
	due := t.DueMs + t.IntervalMs
	if nowMs := now.UnixMilli(); due < nowMs {
		missed := (nowMs - due + t.IntervalMs - 1) / t.IntervalMs
		due += missed * t.IntervalMs
	}
	n := clone(t)
	n.DueMs, n.Attempts, n.NextAttemptMs, n.LastError = due, 0, 0, ""
	n.Fires++
	n.UpdatedMs = now.UnixMilli()
	return n
}

// commitOutcome journals the change from t to next (nil: delete t) and
// runs apply once it is durable.
func (p *partition) commitOutcome(f *flight, t, next *storepb.Task, apply func()) {
	if next == nil {
		p.open.b.DeleteTask(t)
		if t.IdempotencyKey != "" {
			p.open.b.DeleteIdempotency(store.ShardOf(t.Id), t.Client, t.IdempotencyKey)
		}
	} else {
		p.open.b.ReplaceTask(t, next)
	}
	release := p.decide(t.Id, next)
	p.then(func(err error) {
		release()
		if err == nil {
			apply()
		}
	})
}

// deadLetter moves a failed occurrence to the dead letter queue. A
// recurring task goes on to its next occurrence; a BLOCK_ON_ERROR group is
// blocked with the dead letter as its head.
func (p *partition) deadLetter(f *flight, t *storepb.Task, attempts uint32, derr error, now time.Time) {
	occurrence := clone(t)
	occurrence.Attempts, occurrence.LastError, occurrence.NextAttemptMs = attempts, derr.Error(), 0
	dl := &storepb.DeadLetter{
		Id:          p.allocID(store.ShardOf(t.Id)),
		Task:        occurrence,
		LastError:   derr.Error(),
		Attempts:    attempts,
		FailedMs:    now.UnixMilli(),
		BlocksGroup: f.group != "" && t.Mode == storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
	}
	p.open.b.PutDeadLetter(dl)
	p.decideDL(dl.Id, dl)
	var releaseGroup func()
	if dl.BlocksGroup {
		g, release, err := p.group(t.Client, t.Group)
		if err != nil {
			p.s.fail(err)
			return
		}
		g.rec.BlockedTask, g.rec.BlockedSinceMs = dl.Id, now.UnixMilli()
		p.open.b.PutGroup(g.rec)
		releaseGroup = release
	}
	next := nextOccurrence(t, now)
	p.commitOutcome(f, t, next, func() {
		p.s.counters.deadLetters.Add(1)
		p.finished(Finished{Task: occurrence, DeadLetter: dl.Id, Error: dl.LastError})
		if dl.BlocksGroup {
			releaseGroup()
			p.block(f, dl)
		} else {
			p.release(f, true)
		}
		if next != nil {
			p.schedule(next)
		}
	})
}

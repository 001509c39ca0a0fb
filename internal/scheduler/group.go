package scheduler

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/dispatch"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// block makes f, whose task was just dead-lettered as dl, the engine task
// that keeps its group's gate shut.
func (p *partition) block(f *flight, dl *storepb.DeadLetter) {
	delete(p.flights, f.id)
	f.id, f.task, f.state = dl.Id, nil, flightBlocked
	p.blocked[f.group] = f
	p.holdBlocked(f)
}

// holdBlocked fails a blocked head in the engine, which halts its group,
// unless the group was skipped before the head got there.
func (p *partition) holdBlocked(f *flight) {
	if f.skipped {
		p.complete(f, dispatch.Success)
		return
	}
	p.complete(f, dispatch.Failure)
}

// restoreBlocked shuts a blocked group's gate at recovery, before any of
// the group's tasks can fire: the head's engine task fails as soon as it
// starts.
func (p *partition) restoreBlocked(g *storepb.Group) {
	k := groupKey(g.Client, g.Group)
	f := &flight{p: p, id: g.BlockedTask, group: k, key: dispatch.StringKey(k), mode: dispatch.BlockOnError, state: flightBlocked}
	p.blocked[k] = f
	p.groups[k] = &groupState{rec: g}
	p.submit(f)
}

// unblock delivers a blocked group's dead-lettered head again, with fresh
// attempts, then lets the group go on. The head gets a new id but keeps
// its due time, so after a restart it still sorts before the group's
// later tasks.
func (p *partition) unblock(c Caller, client, group string, done func(result)) {
	g, releaseGroup, err := p.group(client, group)
	if err != nil {
		done(result{err: err})
		return
	}
	dl, err := p.blockedHead(c, g)
	if err != nil {
		releaseGroup()
		done(result{err: err})
		return
	}
	t := p.revive(dl)
	p.open.b.DeleteDeadLetter(dl)
	p.decideDL(dl.Id, nil)
	p.open.b.PutTask(t)
	g.rec.BlockedTask, g.rec.BlockedSinceMs = 0, 0
	p.open.b.PutGroup(g.rec)
	release := p.decide(t.Id, t)
	p.thenAck(func(err error) {
		release()
		releaseGroup()
		if err == nil {
			p.reopen(g, func(f *flight) {
				f.id, f.task, f.state = t.Id, t, flightQueued
				p.flights[t.Id] = f
				if f.started {
					_ = p.s.engine.Unblock(f.key) // runs f again: start delivers t
				}
			}, func() { p.schedule(t) })
		}
		done(result{view: p.view(t), err: err})
	})
}

// skip lets a blocked group go on without its head, which stays in the
// dead letter queue, no longer blocking.
func (p *partition) skip(c Caller, client, group string, done func(result)) {
	g, releaseGroup, err := p.group(client, group)
	if err != nil {
		done(result{err: err})
		return
	}
	dl, err := p.blockedHead(c, g)
	if err != nil {
		releaseGroup()
		done(result{err: err})
		return
	}
	kept := proto.Clone(dl).(*storepb.DeadLetter)
	kept.BlocksGroup = false
	p.open.b.PutDeadLetter(kept)
	p.decideDL(kept.Id, kept)
	p.skipHead(g, releaseGroup, done)
}

// skipHead journals the group as unblocked and opens its gate.
func (p *partition) skipHead(g *groupState, releaseGroup func(), done func(result)) {
	g.rec.BlockedTask, g.rec.BlockedSinceMs = 0, 0
	p.open.b.PutGroup(g.rec)
	p.thenAck(func(err error) {
		releaseGroup()
		if err == nil {
			p.reopen(g, func(f *flight) {
				if f.started {
					_ = p.s.engine.Skip(f.key)
				} else {
					f.skipped = true
				}
			}, func() {})
		}
		done(result{err: err})
	})
}

// reopen hands the group's blocked engine task to resume, or calls
// orphaned if there is none.
func (p *partition) reopen(g *groupState, resume func(*flight), orphaned func()) {
	k := groupKey(g.rec.Client, g.rec.Group)
	f := p.blocked[k]
	delete(p.blocked, k)
	if f == nil {
		orphaned()
		return
	}
	resume(f)
}

// blockedHead returns the dead letter blocking g, if the caller may see it.
func (p *partition) blockedHead(c Caller, g *groupState) (*storepb.DeadLetter, error) {
	if !c.owns(g.rec.Client) {
		return nil, ErrNotFound
	}
	if g.rec.BlockedTask == 0 {
		return nil, ErrNotBlocked
	}
	dl, ok, err := p.currentDL(g.rec.BlockedTask)
	if err == nil && !ok {
		err = errors.New("scheduler: blocked group's dead letter is missing")
	}
	return dl, err
}

// revive makes a one-shot task from a dead letter: a new id on the same
// shard, fresh attempts, the occurrence's due time and group order.
func (p *partition) revive(dl *storepb.DeadLetter) *storepb.Task {
	t := clone(dl.Task)
	t.Id = p.allocID(store.ShardOf(dl.Id))
	t.IntervalMs, t.IdempotencyKey = 0, ""
	t.Attempts, t.NextAttemptMs, t.LastError = 0, 0, ""
	t.UpdatedMs = p.now().UnixMilli()
	return t
}

// replay delivers a dead letter again. A group's blocked head is
// unblocked; any other dead letter joins the back of its group now.
func (p *partition) replay(c Caller, id uint64, done func(result)) {
	dl, err := p.deadLetterFor(c, id)
	if err != nil {
		done(result{err: err})
		return
	}
	if dl.BlocksGroup {
		p.unblock(c, dl.Task.Client, dl.Task.Group, done)
		return
	}
	t := p.revive(dl)
	t.DueMs = p.now().UnixMilli()
	releaseGroup := func() {}
	if t.Group != "" {
		g, release, err := p.group(t.Client, t.Group)
		if err != nil {
			done(result{err: err})
			return
		}
		t.Seq = g.rec.NextSeq
		g.rec.NextSeq++
		p.open.b.PutGroup(g.rec)
		releaseGroup = release
	}
	p.open.b.DeleteDeadLetter(dl)
	p.decideDL(dl.Id, nil)
	p.open.b.PutTask(t)
	release := p.decide(t.Id, t)
	p.thenAck(func(err error) {
		release()
		releaseGroup()
		if err == nil {
			p.schedule(t)
		}
		done(result{view: p.view(t), created: true, err: err})
	})
}

// dropDeadLetter deletes a dead letter; a blocked head is skipped first.
func (p *partition) dropDeadLetter(c Caller, id uint64, done func(result)) {
	dl, err := p.deadLetterFor(c, id)
	if err != nil {
		done(result{err: err})
		return
	}
	p.open.b.DeleteDeadLetter(dl)
	p.decideDL(dl.Id, nil)
	if !dl.BlocksGroup {
		p.thenAck(func(err error) { done(result{err: err}) })
		return
	}
	g, releaseGroup, err := p.group(dl.Task.Client, dl.Task.Group)
	if err != nil {
		done(result{err: err})
		return
	}
	p.skipHead(g, releaseGroup, done)
}

func (p *partition) deadLetterFor(c Caller, id uint64) (*storepb.DeadLetter, error) {
	dl, ok, err := p.currentDL(id)
	switch {
	case err != nil:
		return nil, err
	case !ok || !c.owns(dl.Task.Client):
		return nil, ErrNotFound
	}
	return dl, nil
}

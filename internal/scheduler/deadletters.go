package scheduler

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// unblock delivers a blocked group's dead-lettered head again, with fresh
// attempts, then lets the group go on. The head gets a new id but keeps
// its due time and sequence, so it takes its old place in the group's
// order, before and after a restart.
func (p *partition) unblock(c Caller, client, group string, done func(result)) {
	p.begin(p.s.cfg.Store.GroupShard(client, group), storepb.Op_OP_UNBLOCK)
	g, releaseRec, err := p.groupRecord(client, group)
	if err != nil {
		done(result{err: err})
		return
	}
	dl, err := p.blockedHead(c, g)
	var t *storepb.Task
	if err == nil {
		t, err = p.revive(dl, true)
	}
	if err == nil {
		err = p.cmd().PutTask(t)
	}
	if err != nil {
		releaseRec()
		done(result{err: err})
		return
	}
	_ = p.cmd().DeleteDeadLetter(dl) // it was stored, so it encodes
	p.decideDL(dl.Id, dl, nil)
	p.clearBlocked(g)
	g.rec.Tasks++
	p.saveGroup(g)
	dec := p.decide(t.Id, t)
	p.then(func(err error) {
		p.undo(dec)
		releaseRec()
		if err == nil {
			p.reopen(client, group)
		}
		done(result{view: p.view(t), err: err})
	})
}

// skip lets a blocked group go on without its head, which stays in the
// dead letter queue, no longer blocking.
func (p *partition) skip(c Caller, client, group string, done func(result)) {
	p.begin(p.s.cfg.Store.GroupShard(client, group), storepb.Op_OP_SKIP)
	g, releaseRec, err := p.groupRecord(client, group)
	if err != nil {
		done(result{err: err})
		return
	}
	dl, err := p.blockedHead(c, g)
	if err != nil {
		releaseRec()
		done(result{err: err})
		return
	}
	kept := proto.Clone(dl).(*storepb.DeadLetter)
	kept.BlocksGroup = false
	_ = p.cmd().PutDeadLetter(kept) // it was stored, so it encodes
	p.decideDL(kept.Id, dl, kept)
	p.unblocked(g, releaseRec, done)
}

// unblocked journals g as no longer blocked and lets it go on.
func (p *partition) unblocked(g *groupRec, releaseRec func(), done func(result)) {
	p.clearBlocked(g)
	p.saveGroup(g)
	client, group := g.rec.Client, g.rec.Group
	p.then(func(err error) {
		releaseRec()
		if err == nil {
			p.reopen(client, group)
		}
		done(result{err: err})
	})
}

// reopen lets a group that was blocked run again.
func (p *partition) reopen(client, group string) {
	g := p.runOf(store.GroupRef(client, group), true)
	if g.state == runBlocked {
		g.state = runIdle
		p.blocked--
	}
	p.runGroup(g, false)
}

// blockedHead returns the dead letter blocking g, if the caller may see it.
func (p *partition) blockedHead(c Caller, g *groupRec) (*storepb.DeadLetter, error) {
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

// revive makes a one-shot task from a dead letter, with a new id on the
// same shard and fresh attempts. keepPlace keeps the occurrence's due time
// and sequence, so it goes where it was in its group; otherwise it is due
// now, accepted now.
func (p *partition) revive(dl *storepb.DeadLetter, keepPlace bool) (*storepb.Task, error) {
	id, err := p.allocID(store.ShardOf(dl.Id))
	if err != nil {
		return nil, err
	}
	t := clone(dl.Task)
	t.Id = id
	t.IntervalMs, t.Cron, t.TimeZone, t.IdempotencyKey, t.ReplaceKey = 0, "", "", "", ""
	t.Attempts, t.NextAttemptMs, t.LastError = 0, 0, ""
	t.UpdatedMs = p.wallMs()
	if !keepPlace {
		t.Seq, t.DueMs = id, t.UpdatedMs
	}
	return t, nil
}

// replay delivers a dead letter again. A group's blocked head is
// unblocked; any other dead letter is due now, behind the tasks of its
// group that are already due.
func (p *partition) replay(c Caller, id uint64, done func(result)) {
	p.begin(store.ShardOf(id), storepb.Op_OP_REPLAY)
	dl, err := p.deadLetterFor(c, id)
	if err != nil {
		done(result{err: err})
		return
	}
	if dl.BlocksGroup {
		p.unblock(c, dl.Task.Client, dl.Task.Group, done)
		return
	}
	t, err := p.revive(dl, false)
	if err == nil {
		err = p.cmd().PutTask(t)
	}
	if err != nil {
		done(result{err: err})
		return
	}
	releaseRec, err := p.countTask(t, +1)
	if err != nil { // a storage failure: the task is in the batch
		p.s.fail(err)
		done(result{err: err})
		return
	}
	_ = p.cmd().DeleteDeadLetter(dl)
	p.decideDL(dl.Id, dl, nil)
	dec := p.decide(t.Id, t)
	p.then(func(err error) {
		p.undo(dec)
		releaseRec()
		if err == nil {
			p.applyTask(t)
		}
		done(result{view: p.view(t), created: true, err: err})
	})
}

// dropDeadLetter deletes a dead letter; a blocked head's group goes on.
func (p *partition) dropDeadLetter(c Caller, id uint64, done func(result)) {
	p.begin(store.ShardOf(id), storepb.Op_OP_DELETE_DEAD_LETTER)
	dl, err := p.deadLetterFor(c, id)
	if err != nil {
		done(result{err: err})
		return
	}
	p.dropOne(dl, done)
}

// dropOne deletes a dead letter the caller may see.
func (p *partition) dropOne(dl *storepb.DeadLetter, done func(result)) {
	if !dl.BlocksGroup {
		_ = p.cmd().DeleteDeadLetter(dl) // it was stored, so it encodes
		p.decideDL(dl.Id, dl, nil)
		p.then(func(err error) { done(result{err: err}) })
		return
	}
	g, releaseRec, err := p.groupRecord(dl.Task.Client, dl.Task.Group)
	if err != nil {
		done(result{err: err})
		return
	}
	_ = p.cmd().DeleteDeadLetter(dl)
	p.decideDL(dl.Id, dl, nil)
	p.unblocked(g, releaseRec, done)
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

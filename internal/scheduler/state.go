package scheduler

import (
	"container/list"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// taskCacheSize bounds each partition's cache of applied task records:
// about 4,000 tasks of a few hundred bytes each that a partition has
// under way at once, twice over.
const taskCacheSize = 8192

// current returns the task as the loop last decided it: the pending
// overlay first, then the records the loop's applies left, then the
// store. ok is false if it does not exist. The record is shared: it must
// not be changed (clone it).
func (p *partition) current(id uint64) (*storepb.Task, bool, error) {
	if pt, ok := p.pending[id]; ok {
		return pt.task, pt.task != nil, nil
	}
	if t, ok := p.tasks.Task(id); ok {
		return t, true, nil
	}
	t, err := p.s.cfg.Store.Task(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return t, err == nil, err
}

// decision is a task's overlay entry held by one decision.
type decision struct {
	id uint64
	pt *pendingTask
}

// decide records t (nil: deleted) as the task's state until the journal
// makes it durable; undo, given what it returns, releases the overlay
// entry.
func (p *partition) decide(id uint64, t *storepb.Task) decision {
	pt := p.pending[id]
	if pt == nil {
		pt = &pendingTask{}
		p.pending[id] = pt
	}
	pt.task = t
	pt.refs++
	return decision{id: id, pt: pt}
}

// undo releases d's overlay entry, and once no decision on the task is
// pending runs whatever waited for that.
func (p *partition) undo(d decision) {
	if d.pt.refs--; d.pt.refs > 0 {
		return
	}
	delete(p.pending, d.id)
	if w := p.waiters[d.id]; w != nil {
		delete(p.waiters, d.id)
		w()
	}
}

// waitFor runs fn once the pending decision on task id is applied, after
// whatever waited for it before.
func (p *partition) waitFor(id uint64, fn func()) {
	if w := p.waiters[id]; w != nil {
		p.waiters[id] = func() { w(); fn() }
		return
	}
	p.waiters[id] = fn
}

// currentDL returns a dead letter as the loop last decided it.
func (p *partition) currentDL(id uint64) (*storepb.DeadLetter, bool, error) {
	if pd, ok := p.pendingDLs[id]; ok {
		return pd.dl, pd.dl != nil, nil
	}
	dl, err := p.s.cfg.Store.DeadLetter(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return dl, err == nil, err
}

// decideDL is decide for dead letters; applied, it keeps the per-client
// dead letter counts.
func (p *partition) decideDL(id uint64, old, dl *storepb.DeadLetter) {
	pd := p.pendingDLs[id]
	if pd == nil {
		pd = &pendingDL{}
		p.pendingDLs[id] = pd
	}
	pd.dl = dl
	pd.refs++
	p.then(func(err error) {
		if err == nil {
			p.s.deadLetters.changed(old, dl)
		}
		if pd.refs--; pd.refs == 0 {
			delete(p.pendingDLs, id)
		}
	})
}

// allocID issues the next task or dead letter id on a shard this node
// leads. An id is only seen once its command is applied, and a command is
// applied only once its log entry is durable, so a power loss can never
// bring back an id anyone saw: a new leader continues from the state.
func (p *partition) allocID(shard uint16) (uint64, error) {
	if p.issued[shard] >= store.MaxCounter {
		return 0, fmt.Errorf("scheduler: shard %d has issued every id", shard)
	}
	p.issued[shard]++
	return store.MakeID(shard, p.issued[shard]), nil
}

// groupRec is a group's durable record as the loop last decided it.
type groupRec struct {
	rec  *storepb.Group
	refs int
	idle *list.Element // in idleRecs while no decision holds it
}

// groupRecord returns a group's record for decisions, loading it on first
// use (a group without one has no tasks and is not blocked); the returned
// func releases it once those decisions are applied. While it leads the
// group's shard, the loop is the only writer of its groups, so its copy
// is authoritative: records held by decisions stay cached, and up to
// Config.GroupCache idle ones are kept, least recently used first out.
func (p *partition) groupRecord(client, group string) (*groupRec, func(), error) {
	k := store.GroupRef(client, group)
	g := p.recs[k]
	if g != nil && g.idle != nil {
		p.idleRecs.Remove(g.idle)
		g.idle = nil
	}
	if g == nil {
		shard := p.s.cfg.Store.GroupShard(client, group)
		rec, err := p.s.cfg.Store.Group(shard, client, group)
		switch {
		case errors.Is(err, store.ErrNotFound):
			rec = &storepb.Group{Shard: uint32(shard), Client: client, Group: group}
		case err != nil:
			return nil, nil, err
		}
		g = &groupRec{rec: rec}
		p.recs[k] = g
	}
	g.refs++
	return g, func() {
		// A record dropped meanwhile (dropRecords) is no longer the cache's.
		if g.refs--; g.refs == 0 && p.recs[k] == g {
			p.idleRecord(k, g)
		}
	}, nil
}

// dropRecords forgets the cached records of a shard's groups, when this
// node starts or stops leading it: another leader may have changed them
// since, and what decisions that were not applied did to them is not in
// the store.
func (p *partition) dropRecords(shard uint16) {
	for k, g := range p.recs {
		if uint16(g.rec.Shard) != shard {
			continue
		}
		if g.idle != nil {
			p.idleRecs.Remove(g.idle)
			g.idle = nil
		}
		delete(p.recs, k)
	}
}

// idleRecord keeps a released record in the idle cache, dropping the
// least recently used one beyond Config.GroupCache.
func (p *partition) idleRecord(k string, g *groupRec) {
	g.idle = p.idleRecs.PushFront(k)
	if p.idleRecs.Len() <= p.s.cfg.GroupCache {
		return
	}
	oldest := p.idleRecs.Back()
	p.idleRecs.Remove(oldest)
	old := oldest.Value.(string)
	p.recs[old].idle = nil
	delete(p.recs, old)
}

// saveGroup writes g's record, or deletes it when the group has no tasks,
// is not blocked and has no starts its rate limit counts: nothing is left
// to remember.
func (p *partition) saveGroup(g *groupRec) {
	r := g.rec
	if r.Tasks == 0 && r.BlockedTask == 0 && len(r.RecentStartsMs) == 0 {
		_ = p.cmd().DeleteGroup(uint16(r.Shard), r.Client, r.Group)
		return
	}
	// The record's strings are those of a task record already written in
	// this decision, so it encodes.
	_ = p.cmd().PutGroup(r)
}

// clearBlocked marks g as no longer blocked, which takes it out of the
// store's index of blocked groups.
func (p *partition) clearBlocked(g *groupRec) {
	r := g.rec
	if r.BlockedTask != 0 {
		_ = p.cmd().UnblockGroup(uint16(r.Shard), r.Client, r.Group) // its record encodes
	}
	r.BlockedTask, r.BlockedSinceMs = 0, 0
}

// countTask adds delta to the tasks of t's group, if it has one, and
// writes its record; the returned func releases it once applied.
func (p *partition) countTask(t *storepb.Task, delta int) (func(), error) {
	if t.Group == "" {
		return func() {}, nil
	}
	g, release, err := p.groupRecord(t.Client, t.Group)
	if err != nil {
		return nil, err
	}
	if delta < 0 && g.rec.Tasks < uint64(-delta) {
		g.rec.Tasks = 0 // written without a count: never below zero
	} else {
		g.rec.Tasks = uint64(int64(g.rec.Tasks) + int64(delta))
	}
	p.saveGroup(g)
	return release, nil
}

// arm sets the task's one timer (its due time, or a retry) to fire at
// atMs, wall clock.
func (p *partition) arm(id uint64, atMs int64) {
	p.unschedule(id)
	p.timers[id] = p.wheel.Add(wheelTime(atMs), timer{id: id})
}

// unschedule removes the task's timer, if any.
func (p *partition) unschedule(id uint64) {
	if tm, ok := p.timers[id]; ok {
		p.wheel.Cancel(tm)
		delete(p.timers, id)
	}
}

func clone(t *storepb.Task) *storepb.Task { return proto.Clone(t).(*storepb.Task) }

package scheduler

import (
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// current returns the task as the loop last decided it: the pending
// overlay first, then the store. ok is false if it does not exist.
func (p *partition) current(id uint64) (*storepb.Task, bool, error) {
	if pt, ok := p.pending[id]; ok {
		return pt.task, pt.task != nil, nil
	}
	t, err := p.s.cfg.Store.Task(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return t, err == nil, err
}

// decide records t (nil: deleted) as the task's state until the journal
// makes it durable; the returned func releases the overlay entry.
func (p *partition) decide(id uint64, t *storepb.Task) func() {
	pt := p.pending[id]
	if pt == nil {
		pt = &pendingTask{}
		p.pending[id] = pt
	}
	pt.task = t
	pt.refs++
	return func() {
		if pt.refs--; pt.refs == 0 {
			delete(p.pending, id)
		}
	}
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

// decideDL is decide for dead letters. Removing one counts down the
// dead letter gauge once the change is durable.
func (p *partition) decideDL(id uint64, dl *storepb.DeadLetter) {
	pd := p.pendingDLs[id]
	if pd == nil {
		pd = &pendingDL{}
		p.pendingDLs[id] = pd
	}
	pd.dl = dl
	pd.refs++
	p.then(func(err error) {
		if err == nil && dl == nil {
			p.s.counters.deadLetters.Add(-1)
		}
		if pd.refs--; pd.refs == 0 {
			delete(p.pendingDLs, id)
		}
	})
}

// groupKey names a client's group inside the loop and the engine.
func groupKey(client, group string) string { return client + "\x00" + group }

// group returns the group record for decisions, loading it on first use;
// the returned func releases it once those decisions are applied. The loop
// is the only writer of its groups, so its copy is authoritative: records
// held by decisions or blocked stay cached, and up to Config.GroupCache idle
// ones are kept, least recently used first out, so a busy group is not
// read back from the store for every task.
func (p *partition) group(client, group string) (*groupState, func(), error) {
	k := groupKey(client, group)
	g := p.groups[k]
	if g != nil && g.idle != nil {
		p.idleGroups.Remove(g.idle)
		g.idle = nil
	}
	if g == nil {
		shard := store.GroupShard(client, group)
		rec, err := p.s.cfg.Store.Group(shard, client, group)
		switch {
		case errors.Is(err, store.ErrNotFound):
			rec = &storepb.Group{Shard: uint32(shard), Client: client, Group: group, NextSeq: 1}
		case err != nil:
			return nil, nil, err
		}
		g = &groupState{rec: rec}
		p.groups[k] = g
	}
	g.refs++
	return g, func() {
		if g.refs--; g.refs == 0 && g.rec.BlockedTask == 0 {
			p.idleGroup(k, g)
		}
	}, nil
}

// idleGroup keeps a released group record in the idle cache, dropping the
// least recently used one beyond Config.GroupCache.
func (p *partition) idleGroup(k string, g *groupState) {
	g.idle = p.idleGroups.PushFront(k)
	if p.idleGroups.Len() <= p.s.cfg.GroupCache {
		return
	}
	oldest := p.idleGroups.Back()
	p.idleGroups.Remove(oldest)
	old := oldest.Value.(string)
	p.groups[old].idle = nil
	delete(p.groups, old)
}

// allocID issues the next task or dead letter id on shard. The counter is
// written with the batch that uses it.
func (p *partition) allocID(shard uint16) uint64 {
	p.nextID[shard]++
	p.open.shards[shard] = true
	return store.MakeID(shard, p.nextID[shard])
}

// schedule puts a task's current occurrence in the wheel if it is due
// before the loaded horizon; later ones wait for the loader. It is armed
// at its due time even when a retry is pending, so that after a restart a
// retrying task enters its group gate in order and holds its place while
// it waits for the retry.
func (p *partition) schedule(t *storepb.Task) {
	if t.DueMs < p.loadedUntil {
		p.arm(t.Id, t.DueMs)
	}
}

// arm sets the task's one wheel timer to fire at atMs.
func (p *partition) arm(id uint64, atMs int64) {
	p.unschedule(id)
	p.timers[id] = p.wheel.Add(time.UnixMilli(atMs), id)
}

// unschedule removes the task's timer, if any.
func (p *partition) unschedule(id uint64) {
	if tm, ok := p.timers[id]; ok {
		p.wheel.Cancel(tm)
		delete(p.timers, id)
	}
}

func clone(t *storepb.Task) *storepb.Task { return proto.Clone(t).(*storepb.Task) }

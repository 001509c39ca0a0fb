package scheduler

import (
	"math"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// load reads what every replica follows of its shards, before the node
// starts: the highest id issued in each.
func (p *partition) load() error {
	for _, sh := range p.shards {
		if err := p.loadShard(sh); err != nil {
			return err
		}
	}
	return nil
}

// loadShard reads a shard's marks from its state.
func (p *partition) loadShard(shard uint16) error {
	p.tasks.Clear() // the shard's state may have been replaced
	m, err := p.s.cfg.Store.ShardMeta(shard)
	if err != nil {
		return err
	}
	p.lastID[shard] = 0
	if m.LastId > 0 {
		p.lastID[shard] = store.MakeID(shard, m.LastId)
	}
	p.appliedIndex[shard] = m.Applied
	return nil
}

// lead makes this node act as the shard's leader from term on (the
// state holds everything committed before), or, with term 0, stop.
func (p *partition) lead(shard uint16, term uint64) {
	p.waitFollowers(&shard) // the shard's state must hold every entry given before
	if term == 0 {
		p.follow(shard)
		return
	}
	// Its followers' applies left the shard's marks in its state.
	if err := p.loadShard(shard); err != nil {
		p.s.fail(err)
		return
	}
	p.leading[shard] = term
	p.issued[shard] = store.CounterOf(p.lastID[shard])
	p.dropRecords(shard)
	if err := p.rebuild(shard); err != nil {
		p.s.fail(err)
		return
	}
	p.s.leaderReady(p)
}

// rebuild makes the shard's runtime from its state, as a new leader does:
// blocked groups, idempotency key counts, and what is due before the
// horizon. Overdue tasks of no ordered group wait in the ready queue as
// bare ids, and an ordered group needs one wake however many of its tasks
// are due: a backlog costs a few bytes a task.
func (p *partition) rebuild(shard uint16) error {
	st := p.s.cfg.Store
	nowMs := p.wallMs()
	err := st.ScanBlockedGroups(shard, func(g *storepb.Group) error {
		r := p.runOf(store.GroupRef(g.Client, g.Group), true)
		if r.state != runBlocked {
			r.state = runBlocked
			p.blocked++
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.idemKeys[shard] = 0
	err = st.ScanIdempotency(shard, func(store.IdempotencyKey) bool {
		p.idemKeys[shard]++
		return true
	})
	if err != nil {
		return err
	}
	return st.ScanDue(shard, math.MinInt64, p.loadedUntil, func(e store.DueEntry) error {
		p.recovered(e, nowMs)
		return nil
	})
}

// follow drops the shard's runtime when this node no longer leads it:
// timers, groups and their cached records, started tasks and waiting work
// go; decisions not yet applied fail with ErrNotLeader (they may still be
// committed by the new leader); attempts under way finish unheard. The
// new leader delivers again whatever had no durable outcome.
func (p *partition) follow(shard uint16) {
	delete(p.leading, shard)
	delete(p.unleased, shard)
	for _, pc := range p.open[shard] {
		finish(pc, ErrNotLeader)
	}
	delete(p.open, shard)
	for _, pc := range p.proposed[shard] {
		finish(pc, ErrNotLeader)
	}
	delete(p.proposed, shard)
	p.dropRecords(shard)
	for id := range p.timers {
		if store.ShardOf(id) == shard {
			p.unschedule(id)
		}
	}
	for id, f := range p.flights {
		if store.ShardOf(id) == shard {
			if f.state == flightDelivering {
				p.busy--
				p.s.deliveries.Add(-1)
			}
			delete(p.flights, id)
		}
	}
	for _, g := range p.runs {
		if p.s.cfg.Store.GroupShard(g.client, g.group) == shard {
			if g.state == runBlocked {
				p.blocked--
			}
			p.forget(g)
		}
	}
	p.ready = dropShard(p.ready, p.s.cfg.Store, shard)
}

// dropShard removes a shard's work from the ready queue.
func dropShard(ready []readyItem, st *store.Store, shard uint16) []readyItem {
	out := ready[:0]
	for _, it := range ready {
		if it.run != nil && st.GroupShard(it.run.client, it.run.group) == shard || it.run == nil && store.ShardOf(it.id) == shard {
			continue
		}
		out = append(out, it)
	}
	clear(ready[len(out):])
	return out
}

// leads reports whether this node leads the shard.
func (p *partition) leads(shard uint16) bool {
	_, ok := p.leading[shard]
	return ok
}

// recovered puts one due index entry in line when a shard's runtime is
// built.
func (p *partition) recovered(e store.DueEntry, nowMs int64) {
	if len(e.Group) == 0 {
		if e.Due <= nowMs {
			p.ready = append(p.ready, readyItem{id: e.ID})
		} else {
			p.timers[e.ID] = p.wheel.Add(wheelTime(e.Due), timer{id: e.ID})
		}
		return
	}
	g := p.runOf(string(e.Group), true)
	if g.state == runIdle {
		p.sleepUntil(g, max(e.Due, nowMs))
	}
}

// loadAhead moves the tasks whose due time enters the horizon from the
// store into the wheel, for the shards this node leads.
func (p *partition) loadAhead() {
	now := p.mono()
	if now.Before(p.nextLoad) {
		return
	}
	from := p.loadedUntil
	p.loadedUntil = p.wallMs() + p.s.cfg.Horizon.Milliseconds()
	for shard := range p.leading {
		err := p.s.cfg.Store.ScanDue(shard, from, p.loadedUntil, func(e store.DueEntry) error {
			if len(e.Group) != 0 {
				if g := p.runOf(string(e.Group), true); g.state == runIdle {
					p.sleepUntil(g, e.Due)
				}
				return nil
			}
			// A task with an undurable decision is put in line when that
			// decision is applied; one started or armed is in line.
			_, pending := p.pending[e.ID]
			_, flying := p.flights[e.ID]
			_, armed := p.timers[e.ID]
			if !pending && !flying && !armed {
				p.arm(e.ID, e.Due)
			}
			return nil
		})
		if err != nil {
			p.s.fail(err)
			return
		}
	}
	p.nextLoad = now.Add(p.s.cfg.LoadInterval)
}

// startClock sets the horizon and the first load and sweep, before the
// node starts.
func (p *partition) startClock() {
	now := p.mono()
	p.loadedUntil = p.wallMs() + p.s.cfg.Horizon.Milliseconds()
	p.nextLoad = now.Add(p.s.cfg.LoadInterval)
	p.nextSweep = now.Add(p.s.cfg.SweepInterval)
}

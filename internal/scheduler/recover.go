package scheduler

import (
	"math"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// recover rebuilds the partition from the store before its loop starts:
// id counters, blocked groups, idempotency key counts, and what is due
// before the horizon. Whatever was under way at a crash is due, so it
// fires again; blocked groups are restored first, so none of their tasks
// gets past its blocked head. Overdue tasks of no ordered group wait in
// the ready queue as bare ids, and an ordered group needs one wake
// however many of its tasks are due: a backlog costs a few bytes a task.
// Each shard's ids resume above its last reservation, with a new one
// synced before any is issued.
func (p *partition) recover() error {
	st := p.s.cfg.Store
	b := st.NewBatch()
	now := p.mono()
	nowMs := p.wallMs()
	p.loadedUntil = nowMs + p.s.cfg.Horizon.Milliseconds()
	p.nextLoad = now.Add(p.s.cfg.LoadInterval)
	p.nextSweep = now.Add(p.s.cfg.SweepInterval)
	for _, sh := range p.shards {
		m, err := st.ShardMeta(sh)
		if err != nil {
			return err
		}
		r := &idRange{next: m.LastId, durable: m.LastId + idBlock}
		if r.durable > store.MaxCounter {
			return store.ErrCorrupt
		}
		p.ids[sh] = r
		if err := b.PutShardMeta(sh, &storepb.ShardMeta{LastId: r.durable}); err != nil {
			return err
		}
		err = st.ScanBlockedGroups(sh, func(g *storepb.Group) error {
			p.runOf(store.GroupRef(g.Client, g.Group), true).state = runBlocked
			p.blocked++
			return nil
		})
		if err != nil {
			return err
		}
		err = st.ScanIdempotency(sh, func(store.IdempotencyKey) bool {
			p.idemKeys[sh]++
			return true
		})
		if err != nil {
			return err
		}
		err = st.ScanDue(sh, math.MinInt64, p.loadedUntil, func(e store.DueEntry) error {
			p.recovered(e, nowMs)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return st.Commit(b)
}

// recovered puts one due index entry in line at start.
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

// load moves the tasks whose due time enters the horizon from the store
// into the wheel.
func (p *partition) load() {
	now := p.mono()
	if now.Before(p.nextLoad) {
		return
	}
	from := p.loadedUntil
	p.loadedUntil = p.wallMs() + p.s.cfg.Horizon.Milliseconds()
	for _, sh := range p.shards {
		err := p.s.cfg.Store.ScanDue(sh, from, p.loadedUntil, func(e store.DueEntry) error {
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

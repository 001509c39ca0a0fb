package scheduler

import (
	"math"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// recover rebuilds the partition from the store before its loop starts:
// id counters, blocked groups, and the wheel up to the horizon. Whatever
// was queued, delivering or retrying at a crash is due, so it fires again;
// blocked groups are shut first, so none of their tasks gets past its
// blocked head.
func (p *partition) recover(now time.Time) error {
	st := p.s.cfg.Store
	p.loadedUntil = now.Add(p.s.cfg.Horizon).UnixMilli()
	p.nextLoad = now.Add(p.s.cfg.LoadInterval)
	for _, sh := range p.shards {
		m, err := st.ShardMeta(sh)
		if err != nil {
			return err
		}
		p.nextID[sh] = m.LastId
		err = st.ScanBlockedGroups(sh, func(g *storepb.Group) error {
			p.restoreBlocked(g)
			return nil
		})
		if err != nil {
			return err
		}
		err = st.ScanDue(sh, math.MinInt64, p.loadedUntil, func(due int64, id uint64) error {
			p.timers[id] = p.wheel.Add(time.UnixMilli(due), id)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// load moves the tasks whose due time enters the horizon from the store
// into the wheel.
func (p *partition) load() {
	now := p.now()
	if now.Before(p.nextLoad) {
		return
	}
	until := now.Add(p.s.cfg.Horizon).UnixMilli()
	for _, sh := range p.shards {
		err := p.s.cfg.Store.ScanDue(sh, p.loadedUntil, until, func(due int64, id uint64) error {
			// A task with an undurable decision is scheduled when that
			// decision is applied; one in flight or already armed is
			// handled.
			_, pending := p.pending[id]
			_, flying := p.flights[id]
			_, armed := p.timers[id]
			if !pending && !flying && !armed {
				p.timers[id] = p.wheel.Add(time.UnixMilli(due), id)
			}
			return nil
		})
		if err != nil {
			p.s.fail(err)
			return
		}
	}
	p.loadedUntil = until
	p.nextLoad = now.Add(p.s.cfg.LoadInterval)
}

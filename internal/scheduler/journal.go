package scheduler

import (
	"fmt"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// journalBatch is the records of many decisions, committed together, and
// what to do once they are durable.
type journalBatch struct {
	b      *store.Batch
	shards map[uint16]bool // shards whose id counter moved
	ops    []func(err error)
}

func newJournalBatch(st *store.Store) *journalBatch {
	return &journalBatch{b: st.NewBatch(), shards: make(map[uint16]bool)}
}

func (j *journalBatch) len() int { return len(j.ops) }

// then queues fn to run on the loop after the batch is durable, with the
// commit error if it is not.
func (p *partition) then(fn func(err error)) { p.open.ops = append(p.open.ops, fn) }

// flush hands the open batch to the journal goroutine if it is idle. While
// it syncs, the loop fills the next batch: one fsync covers everything
// that arrived during the previous one.
func (p *partition) flush() {
	if p.journalBusy || p.open.len() == 0 {
		return
	}
	for sh := range p.open.shards {
		p.open.b.PutShardMeta(sh, &storepb.ShardMeta{LastId: p.nextID[sh]})
	}
	p.journalBusy = true
	p.journalCh <- p.open
	p.open = newJournalBatch(p.s.cfg.Store)
}

// journal commits batches, one at a time, and reports back to the loop.
func (p *partition) journal() {
	for j := range p.journalCh {
		err := p.s.cfg.Store.Commit(j.b)
		if err != nil {
			err = fmt.Errorf("scheduler: journal commit: %w", err)
		}
		p.inbox.post(func() { p.journaled(j, err) })
	}
}

// journaled applies a durable batch, or fails the scheduler.
func (p *partition) journaled(j *journalBatch, err error) {
	p.journalBusy = false
	if err != nil {
		p.s.fail(err)
	}
	for _, op := range j.ops {
		op(err)
	}
}

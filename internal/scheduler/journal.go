package scheduler

import (
	"fmt"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// journalBatch is the records of many decisions, committed together, and
// what to do once they are durable.
//
// A batch is synced to disk only when it holds a change a caller is told
// about (sync): registrations, updates, cancels, and operator actions on
// groups and dead letters. The scheduler's own changes (delivery
// outcomes, retries, dead-lettering, the sweep) are committed without an
// fsync: losing them in a crash only repeats a delivery, and the next
// synced batch makes them durable too (the log is sequential). This keeps
// fsyncs off the delivery path.
type journalBatch struct {
	b      *store.Batch
	shards map[uint16]bool // shards whose id counter moved
	ops    []func(err error)
	sync   bool
}

func newJournalBatch(st *store.Store) *journalBatch {
	return &journalBatch{b: st.NewBatch(), shards: make(map[uint16]bool)}
}

func (j *journalBatch) len() int { return len(j.ops) }

// then queues fn to run on the loop after the batch is durable, with the
// commit error if it is not.
func (p *partition) then(fn func(err error)) { p.open.ops = append(p.open.ops, fn) }

// thenAck is then for a change a caller is told about: the batch is
// synced before fn runs.
func (p *partition) thenAck(fn func(err error)) {
	p.open.sync = true
	p.then(fn)
}

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
		commit := p.s.cfg.Store.CommitNoSync
		if j.sync {
			commit = p.s.cfg.Store.Commit
		}
		err := commit(j.b)
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

package scheduler

import (
	"fmt"

	"github.com/boomerangd/boomerang/internal/store"
)

// journalBatch is the records of many decisions, committed together, and
// what to do once they are durable. Every batch is synced before its
// decisions are applied: registrations, operator actions and delivery
// outcomes alike, so a group's next task never starts before its
// predecessor's outcome would survive a power loss.
type journalBatch struct {
	b   *store.Batch
	ops []func(err error)
}

func newJournalBatch(st *store.Store) *journalBatch {
	return &journalBatch{b: st.NewBatch()}
}

func (j *journalBatch) len() int { return len(j.ops) }

// then queues fn to run on the loop after the batch is durable, with the
// commit error if it is not.
func (p *partition) then(fn func(err error)) { p.open.ops = append(p.open.ops, fn) }

// journalDepth is how many batches may be in the journal at once: one
// syncing while the next is written to the log behind it.
const journalDepth = 2

// flush hands the open batch to the journal unless journalDepth batches
// are already there. While they sync, the loop fills the next batch: one
// fsync covers everything that arrived in the meantime.
func (p *partition) flush() {
	if p.inJournal >= journalDepth || p.open.len() == 0 {
		return
	}
	p.inJournal++
	p.journalCh <- p.open
	p.open = newJournalBatch(p.s.cfg.Store)
}

// logged is a batch in the log, its fsync under way.
type logged struct {
	j    *journalBatch
	wait func() error
	err  error
}

// journal writes batches to the log in order and, on a second goroutine,
// waits for each one's fsync and reports back to the loop, in the same
// order: the next batch goes into the log while the last one syncs.
func (p *partition) journal() {
	syncing := make(chan logged, journalDepth)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for l := range syncing {
			err := l.err
			if err == nil {
				err = l.wait()
			}
			if err != nil {
				err = fmt.Errorf("scheduler: journal commit: %w", err)
			}
			p.inbox.post(func() { p.journaled(l.j, err) })
		}
	}()
	for j := range p.journalCh {
		l := logged{j: j}
		l.wait, l.err = p.s.cfg.Store.CommitAsync(j.b)
		syncing <- l
	}
	close(syncing)
	<-done
}

// journaled applies a durable batch, or fails the scheduler.
func (p *partition) journaled(j *journalBatch, err error) {
	p.inJournal--
	if err != nil {
		p.s.fail(err)
	}
	for _, op := range j.ops {
		op(err)
	}
}

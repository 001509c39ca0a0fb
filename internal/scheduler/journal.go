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
	for sh := range p.open.shards {
		p.open.b.PutShardMeta(sh, &storepb.ShardMeta{LastId: p.nextID[sh]})
	}
	p.inJournal++
	p.journalCh <- p.open
	p.open = newJournalBatch(p.s.cfg.Store)
}

// logged is a batch in the log, its fsync (if it needs one) under way.
type logged struct {
	j    *journalBatch
	wait func() error // nil: nothing to wait for
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
			if err == nil && l.wait != nil {
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
		if j.sync {
			l.wait, l.err = p.s.cfg.Store.CommitAsync(j.b)
		} else {
			l.err = p.s.cfg.Store.CommitNoSync(j.b)
		}
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

package scheduler

import (
	"context"
	"strings"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// BulkResult says what a bulk operation did.
type BulkResult struct {
	Matched int // tasks or dead letters that matched
	Done    int // of those, cancelled or deleted (0 in a dry run)
	Skipped int // of those, left alone: under way, or a group's blocked head
}

// CancelTasks cancels every task of client, or of one of its groups, and
// reports how many it cancelled and how many it skipped because an
// attempt was under way. It works a page at a time: tasks registered
// while it runs may remain. With dryRun it only counts.
func (s *Scheduler) CancelTasks(ctx context.Context, c Caller, client, group string, dryRun bool) (BulkResult, error) {
	var res BulkResult
	if err := s.readable(ctx, c, client); err != nil {
		return res, err
	}
	if client == "" {
		return res, invalid("client", "is required")
	}
	q := store.TaskQuery{Client: client, Group: group, Limit: store.MaxLimit}
	for {
		page, next, err := s.cfg.Store.ListTasks(q)
		if err != nil {
			return res, err
		}
		res.Matched += len(page)
		if !dryRun {
			if err := s.cancelPage(ctx, c, page, &res); err != nil {
				return res, err
			}
		}
		if next == 0 {
			return res, nil
		}
		q.After = next
	}
}

func (s *Scheduler) cancelPage(ctx context.Context, c Caller, page []*storepb.Task, res *BulkResult) error {
	for p, ids := range s.byPartition(len(page), func(i int) uint64 { return page[i].Id }) {
		r, err := s.call(ctx, p, func(done func(result)) { p.cancelMany(c, ids, done) })
		if err != nil {
			return err
		}
		res.Done += r.count
		res.Skipped += len(ids) - r.count
	}
	return nil
}

// byPartition groups n ids by the partition that owns them.
func (s *Scheduler) byPartition(n int, id func(int) uint64) map[*partition][]uint64 {
	out := make(map[*partition][]uint64)
	for i := range n {
		p := s.partitionOf(store.ShardOf(id(i)))
		out[p] = append(out[p], id(i))
	}
	return out
}

// cancelMany cancels the tasks that still exist, are not under way, and
// are in shards this node leads.
func (p *partition) cancelMany(c Caller, ids []uint64, done func(result)) {
	var tasks []*storepb.Task
	for _, id := range ids {
		if !p.leads(store.ShardOf(id)) || p.editable(id) != nil {
			continue
		}
		t, err := p.lookup(c, id)
		if err == ErrNotFound {
			continue
		}
		if err != nil {
			done(result{err: err})
			return
		}
		tasks = append(tasks, t)
	}
	each := gather(len(tasks), func(err error) { done(result{count: len(tasks), err: err}) })
	for _, t := range tasks {
		p.begin(store.ShardOf(t.Id), storepb.Op_OP_CANCEL)
		if err := p.drop(t); err != nil {
			p.then(func(error) { each(err) })
			continue
		}
		p.then(each)
	}
}

// gather returns a continuation for each of n decisions that calls fn,
// with the first error, once all of them ran (at once when n is 0).
func gather(n int, fn func(err error)) func(err error) {
	if n == 0 {
		fn(nil)
	}
	var first error
	return func(err error) {
		if err != nil && first == nil {
			first = err
		}
		if n--; n == 0 {
			fn(first)
		}
	}
}

// DeadLetterFilter selects dead letters for PurgeDeadLetters. Zero
// fields do not filter.
type DeadLetterFilter struct {
	Client        string // required unless the caller is an admin
	Group         string
	FailedBefore  time.Time
	ErrorContains string
}

func (f DeadLetterFilter) match(dl *storepb.DeadLetter) bool {
	switch {
	case f.Group != "" && dl.Task.Group != f.Group,
		!f.FailedBefore.IsZero() && dl.FailedMs >= f.FailedBefore.UnixMilli(),
		f.ErrorContains != "" && !strings.Contains(dl.LastError, f.ErrorContains):
		return false
	}
	return true
}

// PurgeDeadLetters deletes every dead letter matching f, except groups'
// blocked heads (Skip or DeleteDeadLetter those one by one), and reports
// how many it deleted. With dryRun it only counts.
func (s *Scheduler) PurgeDeadLetters(ctx context.Context, c Caller, f DeadLetterFilter, dryRun bool) (BulkResult, error) {
	var res BulkResult
	if err := s.readable(ctx, c, f.Client); err != nil {
		return res, err
	}
	for after := uint64(0); ; {
		page, next, err := s.cfg.Store.ListDeadLetters(f.Client, after, store.MaxLimit)
		if err != nil {
			return res, err
		}
		var refs []store.DeadLetterRef
		for _, dl := range page {
			if !f.match(dl) {
				continue
			}
			res.Matched++
			if dl.BlocksGroup {
				res.Skipped++
				continue
			}
			refs = append(refs, store.DeadLetterRef{ID: store.DeadLetterID(dl)})
		}
		if !dryRun {
			n, err := s.dropDeadLetters(ctx, refs)
			res.Done += n
			res.Skipped += len(refs) - n
			if err != nil {
				return res, err
			}
		}
		if next == 0 {
			return res, nil
		}
		after = next
	}
}

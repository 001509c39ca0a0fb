package outbox

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// holdFor is how far ahead a task is registered while its row is not yet
// marked QUEUED: far enough that it never fires before it is released,
// or cancelled as an orphan.
const holdFor = 5 * 365 * 24 * time.Hour

// held reports a task registered and not yet released.
func held(t *storepb.Task, now time.Time) bool {
	return t.GetDueMs() > now.Add(holdFor/2).UnixMilli()
}

// release is a run of held tasks of one group to make due, in order:
// each is released only once the one before it is, so that none is ever
// due while a task of its group registered before it is still held. Each
// is released with its registration time as its due time (a value that
// is the same whoever releases it, and when), so the group's tasks run in
// the order they were registered in (doc.go, "Order"). done, if set, is
// called when the run has ended, released or not.
type release struct {
	tasks []heldTask
	done  func()
}

type heldTask struct {
	id uint64
	at time.Time
}

// queueRelease starts releasing runs, together, once fewer than
// maxReleases releases are under way, waiting for room until ctx ends.
// The release goes on until the source stops: a run cut short leaves its
// tasks held and their rows QUEUED, for reconcile or cleanupHeld to
// release later, in order.
func (s *Source) queueRelease(ctx context.Context, runs ...release) {
	select {
	case s.releasing <- struct{}{}:
	case <-ctx.Done():
		for _, r := range runs {
			r.end()
		}
		return
	}
	s.wg.Go(func() {
		defer func() { <-s.releasing }()
		s.releaseRuns(s.ctx, runs)
	})
}

func (r release) end() {
	if r.done != nil {
		r.done()
	}
}

// releaseRuns releases runs in batches of whole runs, each one
// UpdateBatch: a run's tasks (one group's) live on one shard, so the
// scheduler changes them together, in one durable write of that shard,
// and the run's order holds; a poll's runs so cost one write per shard,
// not one per group. The tasks a batch did not release (the scheduler
// busy, the shard's leader moving: the whole run, in practice) go one at
// a time after it, in order, each retried until it is released or ctx
// ends. A run released whole ends at once, before the others' retries,
// which go on side by side.
func (s *Source) releaseRuns(ctx context.Context, runs []release) {
	var rest []release
	for len(runs) > 0 {
		n, size := 1, len(runs[0].tasks)
		for n < len(runs) && size+len(runs[n].tasks) <= scheduler.MaxRegisterBatch {
			size += len(runs[n].tasks)
			n++
		}
		rest = append(rest, s.releaseBatch(ctx, runs[:n])...)
		runs = runs[n:]
	}
	var wg sync.WaitGroup
	for _, r := range rest {
		wg.Go(func() {
			defer r.end()
			for _, t := range r.tasks {
				if !s.releaseOne(ctx, t) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// releaseBatch releases runs in one UpdateBatch, ends those it released
// whole, and returns the others with the tasks left to release.
func (s *Source) releaseBatch(ctx context.Context, runs []release) (rest []release) {
	var reqs []scheduler.UpdateRequest
	for _, r := range runs {
		for _, t := range r.tasks {
			reqs = append(reqs, scheduler.UpdateRequest{ID: t.id, At: &t.at})
		}
	}
	res, err := s.sched.UpdateBatch(ctx, admin, reqs)
	for _, r := range runs {
		left := r.tasks
		if err == nil {
			part := res[:len(r.tasks)]
			res = res[len(r.tasks):]
			left = left[len(left):]
			if i := slices.IndexFunc(part, func(u scheduler.UpdateResult) bool { return !released(u.Err) }); i >= 0 {
				left = r.tasks[i:]
			}
		}
		if len(left) == 0 {
			r.end()
			continue
		}
		rest = append(rest, release{tasks: left, done: r.done})
	}
	return rest
}

// released reports whether an update's answer means its task is released:
// updated, or released already (running or finished).
func released(err error) bool {
	return err == nil || errors.Is(err, scheduler.ErrNotFound) || errors.Is(err, scheduler.ErrInFlight)
}

func (s *Source) releaseOne(ctx context.Context, t heldTask) bool {
	delay := 10 * time.Millisecond
	for {
		_, err := s.sched.Update(ctx, admin, scheduler.UpdateRequest{ID: t.id, At: &t.at})
		if released(err) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !errors.Is(err, scheduler.ErrBusy) {
			s.log.Warn("outbox: releasing a task failed; retrying", "task", t.id, "err", err, "in", delay)
		}
		select {
		case <-ctx.Done():
			return false
		case <-s.opts.Clock.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// releaseInOrder releases held tasks found in the store, each group's in
// the order of their ids (the order they were registered in), and waits
// until it is done or ctx ends.
func (s *Source) releaseInOrder(ctx context.Context, tasks []*storepb.Task) {
	slices.SortFunc(tasks, func(a, b *storepb.Task) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Id, b.Id))
	})
	var wg sync.WaitGroup
	var runs []release
	for i := 0; i < len(tasks); {
		j := i + 1
		for j < len(tasks) && tasks[i].Group != "" && tasks[j].Client == tasks[i].Client && tasks[j].Group == tasks[i].Group {
			j++
		}
		run := release{done: wg.Done}
		for _, t := range tasks[i:j] {
			run.tasks = append(run.tasks, heldTask{id: t.Id, at: time.UnixMilli(t.CreatedMs)})
		}
		wg.Add(1)
		runs = append(runs, run)
		i = j
	}
	if len(runs) > 0 {
		s.queueRelease(ctx, runs...)
	}
	wg.Wait()
}

// cleanupHeld deals with held tasks left by a cycle that did not commit
// (the process died, the database failed, the term ended): a task whose
// row is QUEUED by this node for it is released; any other is cancelled,
// since its row was never marked and will be dispatched anew, here or on
// another node. It runs only while this node does not dispatch, so no
// registration is under way.
func (s *Source) cleanupHeld(ctx context.Context) error {
	from := s.opts.Clock.Now().Add(holdFor / 2)
	for _, client := range s.clients() {
		var after uint64
		for {
			views, next, err := s.sched.List(ctx, admin, scheduler.ListQuery{Client: client, DueFrom: from, After: after, Limit: 1000})
			if err != nil {
				return err
			}
			byRow := map[string]*storepb.Task{}
			var ids []string
			for _, v := range views {
				if src, id, ok := parseKey(v.Task.GetIdempotencyKey()); ok && src == s.cfg.Name {
					byRow[id] = v.Task
					ids = append(ids, id)
				}
			}
			if err := s.settleHeld(ctx, byRow, ids); err != nil {
				return err
			}
			if next == 0 {
				break
			}
			after = next
		}
	}
	return nil
}

// settleHeld releases the held tasks whose rows are QUEUED for them by
// this node, and cancels the others. Pages come in the order of task ids,
// so releasing each page's before reading the next keeps each group's
// order.
func (s *Source) settleHeld(ctx context.Context, byRow map[string]*storepb.Task, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, s.q.rows, ids)
	if err != nil {
		return err
	}
	keep := map[uint64]bool{}
	for rows.Next() {
		var id, status, owner string
		var task int64
		if err := rows.Scan(&id, &status, &task, &owner); err != nil {
			rows.Close()
			return err
		}
		if status == "QUEUED" && owner == s.opts.Node && uint64(task) == byRow[id].GetId() {
			keep[uint64(task)] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	cancelled := 0
	var release []*storepb.Task
	for _, t := range byRow {
		if keep[t.Id] {
			s.inFlight.add(t.Id)
			release = append(release, t)
			continue
		}
		if err := s.sched.Cancel(ctx, admin, t.Id); err != nil && !errors.Is(err, scheduler.ErrNotFound) {
			return err
		}
		cancelled++
	}
	s.releaseInOrder(ctx, release)
	if cancelled > 0 {
		s.log.Info("outbox: cancelled held tasks whose rows were never marked", "tasks", cancelled)
	}
	return nil
}

// recoverStale takes back to PENDING the rows QUEUED for longer than
// StaleAfter by a node that has not been seen for as long: that node's
// store, which holds their tasks, is presumed lost. Fenced by the term:
// a deposed primary changes nothing.
func (s *Source) recoverStale(ctx context.Context, term int64) (int64, error) {
	tx, err := s.fencedTx(ctx, term)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, s.q.stale, interval(s.cfg.StaleAfter), s.opts.Node, s.cfg.Name)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	n := tag.RowsAffected()
	if n > 0 {
		s.metrics.add(countStale, int(n))
		s.log.Warn("outbox: took rows of a silent node back to PENDING", "rows", n)
		signal(s.wake)
	}
	return n, nil
}

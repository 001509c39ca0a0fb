package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// outcomeBatch bounds the rows one statement marks.
const outcomeBatch = 4096

// writeOutcomes writes final outcomes to their rows, in batches, on
// every node (each node marks the rows whose tasks its own store holds).
// A batch that fails is tried again until it is written; at Stop the
// writer drains what has been reported, unless Stop gives up waiting.
func (s *Source) writeOutcomes() {
	select {
	case <-s.ready:
	case <-s.stop:
		return
	}
	for {
		stopping := false
		select {
		case <-s.outcomes.signal:
		case <-s.stop:
			stopping = true
		}
		for {
			batch := s.outcomes.take(outcomeBatch)
			if len(batch) == 0 {
				break
			}
			s.retry(s.writeCtx, "writing final outcomes", func() error { return s.markOutcomes(s.writeCtx, batch) })
			if s.writeCtx.Err() != nil {
				return
			}
		}
		if stopping {
			return
		}
	}
}

// markOutcomes marks rows DONE (or deletes them) and ERROR, each only if
// it is still QUEUED by this node for the same task: a row taken back by
// stale recovery, or marked already, is left alone. The groups of gated
// rows that finished are handed to the primary's next poll.
func (s *Source) markOutcomes(ctx context.Context, batch []outcome) error {
	var ids, errs []string
	var tasks []int64
	var oks []bool
	var attempts []int32
	var delIDs []string
	var delTasks []int64
	for _, o := range batch {
		if o.ok && s.cfg.DeleteDone {
			delIDs, delTasks = append(delIDs, o.id), append(delTasks, int64(o.task))
			continue
		}
		ids, tasks, oks = append(ids, o.id), append(tasks, int64(o.task)), append(oks, o.ok)
		errs, attempts = append(errs, o.err), append(attempts, o.attempts)
	}
	var freed []string
	done, failed := 0, 0
	// Each statement runs in a transaction of its own that turns nested
	// loops off (noNestedLoops); what it returns counts once it commits.
	collect := func(sql string, args ...any) error {
		var groups []string
		var ok, notOK int
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			groups, ok, notOK = nil, 0, 0
			if _, err := tx.Exec(ctx, noNestedLoops); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var group string
				var gated, fine bool
				if err := rows.Scan(&group, &gated, &fine); err != nil {
					return err
				}
				if gated {
					groups = append(groups, group)
				}
				if fine {
					ok++
				} else {
					notOK++
				}
			}
			return rows.Err()
		})
		if err == nil {
			freed, done, failed = append(freed, groups...), done+ok, failed+notOK
		}
		return err
	}
	if len(ids) > 0 {
		if err := collect(s.q.finished, ids, s.opts.Node, tasks, oks, errs, attempts); err != nil {
			return err
		}
	}
	if len(delIDs) > 0 {
		if err := collect(s.q.deleted, delIDs, s.opts.Node, delTasks); err != nil {
			return err
		}
	}
	for _, o := range batch {
		s.inFlight.remove(o.task)
	}
	s.metrics.add(countDone, done)
	s.metrics.add(countError, failed)
	refill := s.loads.finish(freed, s.cfg.refillAt()) // counted on standbys too: a standby may lead next
	if s.primary.Load() {
		s.freed.add(refill)
	}
	return nil
}

// reconcile settles this node's QUEUED rows queued longer than olderThan
// ago against its store. A row whose task still exists is in flight (and
// its task is released if the crash came between queueing and
// releasing). A row whose task is gone reached its final outcome without
// the row learning it (the process died in between, or the outcome was
// lost at Stop): a dead letter of the task means ERROR, none means the
// task was delivered, so DONE. A task cancelled by hand through the API
// also counts as done.
func (s *Source) reconcile(ctx context.Context, olderThan time.Duration) error {
	gone := map[uint64]string{} // task → row id
	var stuck []*storepb.Task   // held: released together, each group's in order
	var cursor *string
	for {
		rows, err := s.pool.Query(ctx, s.q.own, s.opts.Node, interval(olderThan), cursor, 1000)
		if err != nil {
			return err
		}
		var page [][2]any
		for rows.Next() {
			var id string
			var task int64
			if err := rows.Scan(&id, &task); err != nil {
				rows.Close()
				return err
			}
			page = append(page, [2]any{id, uint64(task)})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range page {
			id, task := r[0].(string), r[1].(uint64)
			v, err := s.sched.Get(ctx, admin, task)
			switch {
			case errors.Is(err, scheduler.ErrNotFound):
				gone[task] = id
			case err != nil:
				return err
			default:
				s.inFlight.add(task)
				if held(v.Task, s.opts.Clock.Now()) {
					stuck = append(stuck, v.Task)
				}
			}
		}
		if len(page) < 1000 {
			break
		}
		last := page[len(page)-1][0].(string)
		cursor = &last
	}
	s.releaseInOrder(ctx, stuck)
	if len(gone) == 0 {
		return nil
	}
	outcomes, err := s.deadOutcomes(ctx, gone)
	if err != nil {
		return err
	}
	s.log.Info("outbox: recorded outcomes of tasks that finished while their rows did not learn it", "rows", len(outcomes))
	return s.markOutcomes(ctx, outcomes)
}

// deadOutcomes turns gone tasks into outcomes: ERROR with the dead
// letter's error for those that have one, else DONE.
func (s *Source) deadOutcomes(ctx context.Context, gone map[uint64]string) ([]outcome, error) {
	var out []outcome
	for _, client := range s.clients() {
		var after uint64
		for {
			dls, next, err := s.sched.DeadLetters(ctx, admin, client, after, 1000)
			if err != nil {
				return nil, err
			}
			for _, dl := range dls {
				if id, ok := gone[dl.GetTask().GetId()]; ok {
					out = append(out, outcome{id: id, task: dl.Task.Id, err: dl.LastError, attempts: int32(dl.Attempts)})
					delete(gone, dl.Task.Id)
				}
			}
			if next == 0 || len(gone) == 0 {
				break
			}
			after = next
		}
	}
	for task, id := range gone {
		out = append(out, outcome{id: id, task: task, ok: true})
	}
	return out, nil
}

// clients are the Boomerang clients of the source's targets.
func (s *Source) clients() []string {
	seen := map[string]bool{s.cfg.Target.Client: true}
	out := []string{s.cfg.Target.Client}
	for _, t := range s.cfg.Targets {
		if !seen[t.Client] {
			seen[t.Client] = true
			out = append(out, t.Client)
		}
	}
	return out
}

package outbox

import (
	"context"
	"errors"
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

// release is a held task to make due now.
type release struct{ task uint64 }

func (s *Source) queueRelease(ctx context.Context, task uint64) {
	select {
	case s.releases <- release{task: task}:
	case <-ctx.Done():
	}
}

// releaseLoop makes held tasks due, retrying while the scheduler is busy.
// A task that cannot be released now (the scheduler stopping) stays held
// and its row QUEUED: reconcile releases it later.
func (s *Source) releaseLoop(ctx context.Context) {
	for {
		var r release
		select {
		case <-ctx.Done():
			return
		case r = <-s.releases:
		}
		delay := 10 * time.Millisecond
		for {
			now := s.opts.Clock.Now()
			_, err := s.sched.Update(ctx, admin, scheduler.UpdateRequest{ID: r.task, At: &now})
			if err == nil || !errors.Is(err, scheduler.ErrBusy) {
				if err != nil && !errors.Is(err, scheduler.ErrNotFound) && ctx.Err() == nil {
					s.log.Warn("outbox: releasing a task failed; its row is checked again later", "task", r.task, "err", err)
				}
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-s.opts.Clock.After(delay):
			}
			delay = min(2*delay, time.Second)
		}
	}
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
			byRow := map[string]uint64{}
			var ids []string
			for _, v := range views {
				if src, id, ok := parseKey(v.Task.GetIdempotencyKey()); ok && src == s.cfg.Name {
					byRow[id] = v.Task.Id
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

func (s *Source) settleHeld(ctx context.Context, byRow map[string]uint64, ids []string) error {
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
		if status == "QUEUED" && owner == s.opts.Node && uint64(task) == byRow[id] {
			keep[uint64(task)] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	cancelled := 0
	for _, task := range byRow {
		if keep[task] {
			s.inFlight.add(task)
			s.queueRelease(ctx, task)
			continue
		}
		if err := s.sched.Cancel(ctx, admin, task); err != nil && !errors.Is(err, scheduler.ErrNotFound) {
			return err
		}
		cancelled++
	}
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

package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// registerWorkers bounds the registrations one poll has waiting for
// their acknowledgement at once; the scheduler commits them together.
const registerWorkers = 256

// lockedRow is a row a poll locked to dispatch.
type lockedRow struct {
	id, group, target, mode string
	payload                 []byte
}

// lock locks the heads by id and up to free rows that no group holds
// back, skipping rows another transaction holds.
func (s *Source) lock(ctx context.Context, tx pgx.Tx, heads []string, free int) ([]lockedRow, error) {
	var out []lockedRow
	scan := func(sql string, args ...any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r lockedRow
			var target, mode *string
			if err := rows.Scan(&r.id, &r.group, &r.payload, &target, &mode); err != nil {
				return err
			}
			if target != nil {
				r.target = *target
			}
			if mode != nil {
				r.mode = *mode
			}
			out = append(out, r)
		}
		return rows.Err()
	}
	if len(heads) > 0 {
		if err := scan(s.q.lockHeads, heads); err != nil {
			return nil, err
		}
	}
	if free > 0 {
		n := len(out)
		if err := scan(s.q.lockFree, free); err != nil {
			return nil, err
		}
		s.metrics.add(countPolled, len(out)-n)
	}
	return out, nil
}

// dispatchResult sorts a poll's rows.
type dispatchResult struct {
	queued []queuedRow // registered: to mark QUEUED
	poison []poisonRow // refused for good: to mark ERROR
	failed []error     // not registered now: stay PENDING
}

type queuedRow struct {
	id   string
	task uint64
	held bool // to release once marked
}

type poisonRow struct{ id, err string }

// registerAll registers every row as a held task, registerWorkers at a
// time.
func (s *Source) registerAll(ctx context.Context, rows []lockedRow) dispatchResult {
	var mu sync.Mutex
	var res dispatchResult
	sem := make(chan struct{}, registerWorkers)
	var wg sync.WaitGroup
	for _, r := range rows {
		req, err := s.request(r)
		if err != nil {
			res.poison = append(res.poison, poisonRow{id: r.id, err: err.Error()})
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := s.register(ctx, req, r.id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				res.queued = append(res.queued, queuedRow{id: r.id, task: v.Task.Id, held: held(v.Task, s.opts.Clock.Now())})
			case errors.Is(err, scheduler.ErrInvalid):
				res.poison = append(res.poison, poisonRow{id: r.id, err: err.Error()})
			default:
				res.failed = append(res.failed, err)
			}
		}()
	}
	wg.Wait()
	return res
}

// request is the registration of a row: a task of its target's client,
// in its group, due in holdFor (released once the row is QUEUED), keyed
// by the row's id. A BLOCK_ON_ERROR row is registered NEXT_ON_ERROR: the
// table, not the scheduler, blocks the group, so that fixing the table
// is all it takes to unblock it. Errors are poison: the row goes to
// ERROR with the message.
func (s *Source) request(r lockedRow) (scheduler.RegisterRequest, error) {
	target := s.cfg.Target
	if r.target != "" {
		t, ok := s.cfg.Targets[r.target]
		if !ok {
			return scheduler.RegisterRequest{}, fmt.Errorf("outbox: unknown target %q", r.target)
		}
		target = t
	}
	mode := s.cfg.Mode
	if r.mode != "" {
		m, ok := storepb.DispatchMode_value["DISPATCH_MODE_"+r.mode]
		if !ok || m == 0 {
			return scheduler.RegisterRequest{}, fmt.Errorf("outbox: unknown dispatch mode %q (want IMMEDIATE, NEXT_ON_ERROR or BLOCK_ON_ERROR)", r.mode)
		}
		mode = storepb.DispatchMode(m)
	}
	if mode == storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR {
		mode = storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR
	}
	if err := delivery.ValidateCallback(target.Callback, len(r.payload)); err != nil {
		return scheduler.RegisterRequest{}, err
	}
	return scheduler.RegisterRequest{
		Client:         target.Client,
		Group:          r.group,
		Payload:        r.payload,
		At:             s.opts.Clock.Now().Add(holdFor),
		Mode:           mode,
		Callback:       target.Callback,
		IdempotencyKey: idempotencyKey(s.cfg.Name, "", r.id),
	}, nil
}

// maxRegistrations bounds the keys one row tries: one per time it came
// back to PENDING within the scheduler's idempotency retention.
const maxRegistrations = 100

// register registers a row's task, passing over tasks its earlier keys
// made that have finished (see keyPrefix).
func (s *Source) register(ctx context.Context, req scheduler.RegisterRequest, id string) (scheduler.TaskView, error) {
	for range maxRegistrations {
		v, _, err := s.sched.Register(ctx, req)
		if err != nil || v.Status != scheduler.StatusFinished {
			return v, err
		}
		req.IdempotencyKey = idempotencyKey(s.cfg.Name, strconv.FormatUint(v.Task.GetId(), 10), id)
	}
	return scheduler.TaskView{}, fmt.Errorf("outbox: row %s was registered %d times within the scheduler's idempotency retention", id, maxRegistrations)
}

// markDispatched marks the registered rows QUEUED with their tasks and
// the poison rows ERROR, in the poll's transaction.
func (s *Source) markDispatched(ctx context.Context, tx pgx.Tx, res dispatchResult) error {
	if len(res.queued) > 0 {
		ids := make([]string, len(res.queued))
		tasks := make([]int64, len(res.queued))
		for i, q := range res.queued {
			ids[i], tasks[i] = q.id, int64(q.task)
		}
		if _, err := tx.Exec(ctx, s.q.queued, ids, tasks, s.opts.Node); err != nil {
			return err
		}
	}
	if len(res.poison) > 0 {
		ids := make([]string, len(res.poison))
		msgs := make([]string, len(res.poison))
		for i, p := range res.poison {
			ids[i], msgs[i] = p.id, p.err
		}
		if _, err := tx.Exec(ctx, s.q.poison, ids, msgs); err != nil {
			return err
		}
	}
	return nil
}

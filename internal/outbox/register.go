package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// registerWorkers bounds the registrations under a new key one poll
// has waiting for their acknowledgement at once.
const registerWorkers = 64

// lockedRow is a row a poll locked to dispatch.
type lockedRow struct {
	id, group, target, mode string
	payload                 []byte
	chain                   int // its group's place among the poll's chains; -1 for a free row
}

// lock locks the rows of the chains and up to free rows that no group
// holds back, skipping rows another transaction holds. A chain keeps
// only the rows before the first it could not lock: the rest of its
// group waits for a later poll.
func (s *Source) lock(ctx context.Context, tx pgx.Tx, chains []chain, free int) ([]lockedRow, error) {
	var out []lockedRow
	scan := func(sql string, args ...any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := lockedRow{chain: -1}
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
	var ids []string
	for _, c := range chains {
		ids = append(ids, c.ids...)
	}
	if len(ids) > 0 {
		if err := scan(s.q.lockHeads, ids); err != nil {
			return nil, err
		}
		got := make(map[string]lockedRow, len(out))
		for _, r := range out {
			got[r.id] = r
		}
		out = out[:0]
		for i, c := range chains {
			for _, id := range c.ids {
				r, ok := got[id]
				if !ok {
					break
				}
				r.chain = i
				out = append(out, r)
			}
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
	queued []queuedRow // registered: to mark QUEUED; a chain's rows in order
	poison []poisonRow // refused for good: to mark ERROR
	failed []error     // not registered now: stay PENDING
	cancel []uint64    // held tasks of rows cut from their chain: to cancel before the commit
}

type queuedRow struct {
	id    string
	chain int
	task  uint64
	at    time.Time // the due time it is released with: its registration time
	held  bool      // to release once marked
}

type poisonRow struct{ id, err string }

// registerAll registers the rows as held tasks, in one batch, in the
// order of the rows: the tasks of one group are then numbered in their
// rows' order, which is the order the scheduler runs them in once they
// are released with their registration times as due times. A chain is
// cut at its first row that does not register as a new task in that
// batch: the rows after it wait for a later poll, and their held tasks
// are cancelled, so that no task of the group is ever numbered out of its
// row's place.
func (s *Source) registerAll(ctx context.Context, rows []lockedRow) dispatchResult {
	var res dispatchResult
	var reqs []scheduler.RegisterRequest
	var regRows []lockedRow
	cut := map[int]bool{}
	for _, r := range rows {
		if r.chain >= 0 && cut[r.chain] {
			continue
		}
		req, err := s.request(r)
		if err != nil {
			res.poison = append(res.poison, poisonRow{id: r.id, err: err.Error()})
			cut[r.chain] = r.chain >= 0 // the next poll sees the ERROR row, and its mode
			continue
		}
		reqs, regRows = append(reqs, req), append(regRows, r)
	}
	results := s.registerBatch(ctx, reqs)
	now := s.opts.Clock.Now()
	var again []int
	for i, r := range regRows {
		v, err := results[i].View, results[i].Err
		created := err == nil && v.Status != scheduler.StatusFinished
		if r.chain >= 0 && cut[r.chain] {
			if created && held(v.Task, now) {
				res.cancel = append(res.cancel, v.Task.Id)
			}
			continue
		}
		switch {
		case created:
			res.queued = append(res.queued, queuedRow{id: r.id, chain: r.chain, task: v.Task.Id, at: time.UnixMilli(v.Task.GetCreatedMs()), held: held(v.Task, now)})
		case err == nil:
			again = append(again, i) // its key's task finished: a new key
		case errors.Is(err, scheduler.ErrInvalid):
			res.poison = append(res.poison, poisonRow{id: r.id, err: err.Error()})
		default:
			res.failed = append(res.failed, err)
		}
		if !created && r.chain >= 0 {
			cut[r.chain] = true
		}
	}
	s.registerAgain(ctx, regRows, reqs, again, &res)
	return res
}

// registerBatch registers reqs in batches of the scheduler's largest, in
// order; a batch that fails as a whole fails each of its tasks.
func (s *Source) registerBatch(ctx context.Context, reqs []scheduler.RegisterRequest) []scheduler.RegisterResult {
	out := make([]scheduler.RegisterResult, 0, len(reqs))
	for part := range slices.Chunk(reqs, scheduler.MaxRegisterBatch) {
		rs, err := s.sched.RegisterBatch(ctx, part)
		if err != nil {
			rs = make([]scheduler.RegisterResult, len(part))
			for i := range rs {
				rs[i].Err = err
			}
		}
		out = append(out, rs...)
	}
	return out
}

// registerAgain registers the rows whose first key named a finished task
// (the row came back to PENDING) under their next keys, registerWorkers
// at a time. Each is the last of its chain, so its new task, numbered
// after the batch's, is in its place.
func (s *Source) registerAgain(ctx context.Context, rows []lockedRow, reqs []scheduler.RegisterRequest, idx []int, res *dispatchResult) {
	var mu sync.Mutex
	sem := make(chan struct{}, registerWorkers)
	var wg sync.WaitGroup
	for _, i := range idx {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := rows[i]
			v, err := s.register(ctx, reqs[i], r.id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				res.queued = append(res.queued, queuedRow{id: r.id, chain: r.chain, task: v.Task.Id, at: time.UnixMilli(v.Task.GetCreatedMs()), held: held(v.Task, s.opts.Clock.Now())})
			case errors.Is(err, scheduler.ErrInvalid):
				res.poison = append(res.poison, poisonRow{id: r.id, err: err.Error()})
			default:
				res.failed = append(res.failed, err)
			}
		})
	}
	wg.Wait()
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
	if len(res.queued)+len(res.poison) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, noNestedLoops); err != nil {
		return err
	}
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

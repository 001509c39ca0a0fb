package outbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boomerangd/boomerang/internal/scheduler"
)

// ErrDeposed: the lease row names another primary or a later term; this
// node's writes as primary are refused.
var ErrDeposed = errors.New("outbox: no longer the primary")

// Pacing of the primary's polls.
const (
	// minFullGap spaces the full polls that notifications wake: under a
	// steady insert load every insert notifies.
	minFullGap = 50 * time.Millisecond
	// settleDelay is how soon a group whose head the guard held back is
	// polled again.
	settleDelay = 5 * time.Millisecond
)

// fencedTx begins a transaction that holds the lease row FOR KEY SHARE and
// has checked that it names this node and term: a new primary's takeover
// (which locks the row FOR UPDATE) waits for it to end, while renewals
// (plain updates of the row's other columns) do not, and its writes are refused once another term has
// begun.
func (s *Source) fencedTx(ctx context.Context, term int64) (pgx.Tx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	var holder string
	var current int64
	err = tx.QueryRow(ctx, s.q.fence, s.cfg.Name).Scan(&holder, &current)
	if err == nil && (holder != s.opts.Node || current != term) {
		err = fmt.Errorf("%w: term %d is held by %s with term %d", ErrDeposed, term, holder, current)
	} else if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: no lease row", ErrDeposed)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

// lead runs one term as primary: it records the term in the lease row
// (for an Elector other than the lease row itself), then polls and
// dispatches until the term ends or the source stops, and resigns.
func (s *Source) lead(ctx context.Context, lease Lease) {
	term := lease.Term()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lease.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.LeaseTTL)
		lease.Resign(rctx)
		rcancel()
	}()
	var claimed int64
	err := pgx.BeginFunc(ctx, s.leasePool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.lockLease, s.cfg.Name); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, s.q.claim, s.cfg.Name, s.opts.Node, term)
		claimed = tag.RowsAffected()
		return err
	})
	if err != nil || claimed != 1 {
		s.log.Warn("outbox: could not record the term in the lease row", "term", term, "err", err)
		return
	}
	s.primary.Store(true)
	s.metrics.primary.Set(1)
	s.log.Info("outbox: primary", "term", term)
	defer func() {
		s.primary.Store(false)
		s.metrics.primary.Set(0)
		s.log.Info("outbox: no longer primary", "term", term)
	}()
	l := &leader{s: s, term: term, guard: newGuard(4 * (s.cfg.MaxInFlight + s.cfg.BatchSize*(s.cfg.GroupDepth+1))),
		pending: map[string]struct{}{}, busy: map[string]struct{}{}}
	l.run(ctx)
}

// leader is the state of one term as primary. Polls run concurrently;
// mu guards what they share.
type leader struct {
	s    *Source
	term int64

	mu       sync.Mutex
	guard    *guard
	cursor   string              // the full poll resumes after this group
	pending  map[string]struct{} // groups to poll again soon: held back by the guard or by MaxInFlight
	busy     map[string]struct{} // groups a poll has taken rows of, until their tasks are released
	full     bool                // a full poll is due
	lastFull time.Time
}

func (l *leader) run(ctx context.Context) {
	s := l.s
	clock := s.opts.Clock
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan cycleResult, parallelPolls)
	running := 0
	defer func() {
		cancel()
		for ; running > 0; running-- {
			<-results
		}
	}()
	poll := clock.NewTimer(0)
	defer poll.Stop()
	staleTick := clock.NewTicker(max(s.cfg.StaleAfter/4, time.Second))
	defer staleTick.Stop()
	var soon <-chan time.Time
	fullSoon := false
	retry := false // held-back groups are due again
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.Chan():
			l.setFull()
		case <-s.wake:
			if gap := minFullGap - clock.Since(l.lastFullAt()); gap > 0 {
				fullSoon = true
				if soon == nil {
					soon = clock.After(gap)
				}
			} else {
				l.setFull()
			}
		case <-s.freed.signal:
		case <-soon:
			soon = nil
			if fullSoon {
				l.setFull()
			}
			fullSoon = false
			retry = true
		case <-staleTick.Chan():
			if _, err := s.recoverStale(ctx, l.term); errors.Is(err, ErrDeposed) {
				return
			} else if err != nil && ctx.Err() == nil {
				s.log.Warn("outbox: stale recovery failed", "err", err)
			}
		case r := <-results:
			running--
			s.metrics.polls.Add(1)
			switch {
			case errors.Is(r.err, ErrDeposed), errors.Is(r.err, errUncertain), ctx.Err() != nil:
				if r.err != nil && ctx.Err() == nil {
					s.log.Warn("outbox: ending the term", "term", l.term, "err", r.err)
				}
				return
			case r.err != nil:
				failures++
				s.log.Warn("outbox: poll failed", "err", r.err)
				if r.full {
					l.setFull()
				}
				if soon == nil {
					soon = clock.After(min(time.Duration(failures)*100*time.Millisecond, s.cfg.PollInterval))
				}
				continue
			}
			failures = 0
			if r.full {
				poll.Reset(s.cfg.PollInterval)
			}
			if r.more {
				l.setFull() // go on through the groups at once
			} else if l.hasPending() && soon == nil {
				soon = clock.After(settleDelay)
			}
		}
		// Start polls while there is work and room: a poll spends most
		// of its time waiting (for the scheduler's and the database's
		// syncs), so a few run at once; they never take the same row,
		// since each locks its rows.
		for running < parallelPolls && s.inFlight.len() < s.cfg.MaxInFlight && (retry || l.hasFull() || s.freed.len() > 0) {
			running++
			retry = false
			go func() { results <- l.cycle(ctx) }()
		}
	}
}

// parallelPolls bounds the polls under way at once.
const parallelPolls = 4

// cycleResult is how a poll went.
type cycleResult struct {
	full, more bool
	err        error
}

func (l *leader) setFull() {
	l.mu.Lock()
	l.full = true
	l.mu.Unlock()
}

func (l *leader) hasFull() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.full
}

func (l *leader) hasPending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending) > 0
}

func (l *leader) lastFullAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastFull
}

// errUncertain: a cycle registered tasks and then could not learn
// whether its transaction committed. The term ends, so that the held
// tasks are sorted out before anything is dispatched again.
var errUncertain = errors.New("outbox: a poll's commit failed after registering tasks")

// chain is the rows of one group a poll takes, in the group's order.
type chain struct {
	group string
	ids   []string
}

// cycle is one poll: in one fenced transaction it finds the rows that
// may go, locks them (and free rows), registers each as a held task,
// marks them QUEUED (poison rows ERROR) and commits; then it releases
// the tasks. more reports that a full poll stopped short of the end of
// the groups.
func (l *leader) cycle(ctx context.Context) cycleResult {
	s := l.s
	capacity := s.cfg.MaxInFlight - s.inFlight.len()
	if capacity <= 0 {
		// Finishing rows free capacity and wake the poll with their
		// groups; their groups wait in pending meanwhile.
		l.mu.Lock()
		maps.Copy(l.pending, s.freed.take())
		l.mu.Unlock()
		return cycleResult{}
	}
	limit := min(capacity, s.cfg.BatchSize)
	tx, err := s.fencedTx(ctx, l.term)
	if err != nil {
		return cycleResult{err: err}
	}
	defer tx.Rollback(ctx)
	chains, r := l.plan(ctx, tx, limit)
	if r.err != nil {
		return r
	}
	releasing := map[int]bool{} // chains whose release is under way: their groups stay busy until it ends
	defer func() {
		l.mu.Lock()
		for i, c := range chains {
			if !releasing[i] {
				delete(l.busy, c.group)
			}
		}
		l.mu.Unlock()
	}()
	taken := 0
	for _, c := range chains {
		taken += len(c.ids)
	}
	rows, err := s.lock(ctx, tx, chains, limit-taken)
	if err != nil {
		r.err = err
		return r
	}
	if len(rows) == 0 {
		r.err = tx.Commit(ctx)
		return r
	}
	res := s.registerAll(ctx, rows)
	for _, task := range res.cancel {
		if err := s.sched.Cancel(ctx, admin, task); err != nil && !errors.Is(err, scheduler.ErrNotFound) {
			r.err = l.uncertain(err)
			return r
		}
	}
	if err := s.markDispatched(ctx, tx, res); err != nil {
		r.err = l.uncertain(err)
		return r
	}
	if err := tx.Commit(ctx); err != nil {
		r.err = l.uncertain(err)
		return r
	}
	l.dispatched(ctx, res, chains, releasing)
	return r
}

// plan takes the work due (finished rows' groups, groups held back, a
// full poll) and returns the chains of rows that may go, marking their
// groups busy. Plans run one at a time: the guard needs each poll's
// writers and snapshot in turn.
func (l *leader) plan(ctx context.Context, tx pgx.Tx, limit int) ([]chain, cycleResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.s
	if err := l.readWriters(ctx, tx); err != nil {
		return nil, cycleResult{err: err}
	}
	groups := s.freed.take()
	if groups == nil {
		groups = map[string]struct{}{}
	}
	maps.Copy(groups, l.pending)
	clear(l.pending)
	for g := range l.busy {
		delete(groups, g) // polled again when its release ends, if it has room
	}
	r := cycleResult{full: l.full}
	l.full = false
	if r.full {
		l.lastFull = s.opts.Clock.Now()
	}
	chains, more, err := l.heads(ctx, tx, slices.Collect(maps.Keys(groups)), r.full, limit)
	if err != nil {
		for _, c := range chains {
			delete(l.busy, c.group)
		}
		maps.Copy(l.pending, groups)
		l.full = l.full || r.full
		r.err = err
		return nil, r
	}
	r.more = more
	return chains, r
}

// uncertain ends the term after a poll that registered tasks failed to
// mark or commit its rows. Its held tasks are not cancelled here: the
// commit may have gone through. cleanupHeld, before the next campaign,
// reads the rows and releases or cancels each.
func (l *leader) uncertain(err error) error {
	return fmt.Errorf("%w: %w", errUncertain, err)
}

// dispatched does what follows a commit: count, release. The poll's runs
// are released together (releaseRuns), each chain's tasks in order; its
// group stays busy until they are, so that no later poll releases a task
// of the group before them.
func (l *leader) dispatched(ctx context.Context, res dispatchResult, chains []chain, releasing map[int]bool) {
	s := l.s
	tasks := make([]uint64, 0, len(res.queued))
	runs := map[int]*release{}
	var free []heldTask
	for _, q := range res.queued {
		tasks = append(tasks, q.task)
		if q.chain >= 0 {
			s.loads.add(chains[q.chain].group, 1)
		}
		switch {
		case !q.held:
		case q.chain < 0:
			free = append(free, heldTask{id: q.task, at: q.at})
		case runs[q.chain] == nil:
			runs[q.chain] = &release{tasks: []heldTask{{id: q.task, at: q.at}}}
		default:
			runs[q.chain].tasks = append(runs[q.chain].tasks, heldTask{id: q.task, at: q.at})
		}
	}
	l.mu.Lock()
	for _, q := range res.queued {
		l.guard.forget(q.id)
	}
	for _, p := range res.poison {
		l.guard.forget(p.id)
	}
	for i := range runs {
		releasing[i] = true
	}
	l.mu.Unlock()
	s.inFlight.add(tasks...)
	s.metrics.add(countDispatched, len(res.queued))
	s.metrics.add(countQueued, len(res.queued))
	s.metrics.add(countError, len(res.poison))
	if len(res.failed) > 0 {
		s.log.Warn("outbox: rows could not be registered and stay PENDING", "rows", len(res.failed), "err", res.failed[0])
	}
	all := make([]release, 0, len(runs)+len(free))
	for i, run := range runs {
		group := chains[i].group
		run.done = func() {
			l.mu.Lock()
			delete(l.busy, group)
			l.mu.Unlock()
			if s.loads.low(group, s.cfg.refillAt()) {
				s.freed.add([]string{group}) // rows finished while it was busy
			}
		}
		all = append(all, *run)
	}
	for _, t := range free {
		all = append(all, release{tasks: []heldTask{t}})
	}
	if len(all) > 0 {
		s.queueRelease(ctx, all...)
	}
}

// readWriters starts the guard's poll with the transactions that hold a
// write lock on the table now, before the heads' snapshot.
func (l *leader) readWriters(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, l.s.q.writers, l.s.tableOID)
	if err != nil {
		return err
	}
	writers := writerSet{}
	for rows.Next() {
		var vxid string
		if err := rows.Scan(&vxid); err != nil {
			rows.Close()
			return err
		}
		writers[vxid] = struct{}{}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	l.guard.begin(writers)
	return nil
}

// heads reads the first rows of the given groups and, when full, of the
// next groups after the cursor, and returns the chains of rows that may
// go, at most limit rows in all (see take).
func (l *leader) heads(ctx context.Context, tx pgx.Tx, groups []string, full bool, limit int) (chains []chain, more bool, err error) {
	// The rows after the last that may go are seen ahead, as many as
	// the group's next refill takes and one more: by the time they are
	// due, the guard has let them through.
	cfg := &l.s.cfg
	depth := 2*cfg.GroupDepth - cfg.refillAt() + 1
	visit := limit
	if len(groups) > 0 {
		if chains, _, err = l.readHeads(ctx, tx, chains, &limit, l.s.q.headsOf, groups, depth); err != nil {
			return chains, false, err
		}
	}
	if full {
		var last *string
		if chains, last, err = l.readHeads(ctx, tx, chains, &limit, l.s.q.heads, l.cursor, visit, depth); err != nil {
			return chains, false, err
		}
		if last == nil {
			l.cursor = "" // the end: start over next time
		} else {
			l.cursor, more = *last, true
		}
	}
	return chains, more, nil
}

// readHeads runs a heads query and appends the chains that may go,
// taking from *room. last is the last group visited, nil when the query
// reached the end of the groups.
func (l *leader) readHeads(ctx context.Context, tx pgx.Tx, chains []chain, room *int, sql string, args ...any) (_ []chain, last *string, err error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return chains, nil, err
	}
	defer rows.Close()
	polled := 0
	for rows.Next() {
		var group *string
		var g groupRows
		var blocked bool
		if err := rows.Scan(&group, &g.ids, &g.statuses, &g.owners, &g.modes, &blocked); err != nil {
			return chains, nil, err
		}
		last = group
		if group == nil || len(g.ids) == 0 {
			continue
		}
		polled++
		if _, busy := l.busy[*group]; busy || blocked {
			continue // a busy group is polled again when its release ends
		}
		if *room == 0 {
			l.pending[*group] = struct{}{}
			continue
		}
		if ids := l.take(*group, g, *room); len(ids) > 0 {
			chains = append(chains, chain{group: *group, ids: ids})
			l.busy[*group] = struct{}{}
			*room -= len(ids)
		}
	}
	if err := rows.Err(); err != nil {
		return chains, nil, err
	}
	l.s.metrics.add(countPolled, polled)
	return chains, last, nil
}

// groupRows are a group's first gated rows (PENDING or QUEUED), in order.
type groupRows struct{ ids, statuses, owners, modes []string }

// take returns the PENDING rows of a group that may go now, in order, at
// most room: those after the rows this node has QUEUED (in flight in its
// store, where they run first), up to GroupDepth rows of the group in
// all, each let through by the guard, none behind a BLOCK_ON_ERROR row
// (whose failure must stop the group before anything behind it runs).
// Rows another node has QUEUED hold the whole group: their tasks are in
// that node's store.
func (l *leader) take(group string, g groupRows, room int) []string {
	var ids []string
	queued, blocking, stopped := 0, false, false
	for i, id := range g.ids {
		if g.statuses[i] != "PENDING" {
			if len(ids) > 0 || stopped || g.owners[i] != l.s.opts.Node {
				break
			}
			queued++
			blocking = g.modes[i] == "BLOCK_ON_ERROR"
			continue
		}
		if !stopped && !l.guard.settled(id) {
			l.pending[group] = struct{}{}
			stopped = true
		}
		stopped = stopped || blocking || queued+len(ids) >= l.s.cfg.GroupDepth || len(ids) >= room
		if stopped {
			l.guard.see(id) // seen ahead: let through by the time it is due
			continue
		}
		ids = append(ids, id)
		blocking = g.modes[i] == "BLOCK_ON_ERROR"
	}
	l.s.loads.set(group, queued) // dispatched adds the rows that go
	return ids
}

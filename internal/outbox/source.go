package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/boomerangd/boomerang/internal/scheduler"
)

// Source runs one outbox table: on every node it records the final
// outcomes of the tasks this node queued and keeps its own QUEUED rows
// honest; on the primary it also polls and dispatches. See doc.go.
type Source struct {
	cfg     Config
	opts    *Options
	log     *slog.Logger
	metrics *sourceMetrics

	sched     Scheduler
	pool      *pgxpool.Pool
	leasePool *pgxpool.Pool // the lease and the heartbeat: never queued behind polls
	q         *queries      // set once ready is closed
	table     string        // schema.name, as notifications name it
	tableOID  uint32
	ready     chan struct{}
	elector   Elector

	wake      chan struct{} // a notification, or the poll is due early
	outcomes  outcomeQueue
	freed     groupSet      // groups with a finished gated row: poll them next
	loads     groupLoads    // rows of each group this node has QUEUED, as its polls saw them
	inFlight  taskSet       // tasks this node queued, not finished
	releasing chan struct{} // one per run of releases under way
	primary   atomic.Bool

	cancel context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
	marks  sync.WaitGroup // the outcome writer, stopped last
	stop   chan struct{}  // closed by Stop: the writer drains and ends

	writeCtx    context.Context // the outcome writer's; cancelled when Stop gives up
	writeCancel context.CancelFunc
}

func newSource(cfg Config, opts *Options, m *sourceMetrics) *Source {
	return &Source{
		cfg: cfg, opts: opts, metrics: m,
		log:       opts.Logger.With("source", cfg.Name),
		ready:     make(chan struct{}),
		wake:      make(chan struct{}, 1),
		outcomes:  outcomeQueue{signal: make(chan struct{}, 1)},
		freed:     groupSet{signal: make(chan struct{}, 1)},
		loads:     groupLoads{n: map[string]int{}},
		inFlight:  taskSet{ids: map[uint64]struct{}{}, gauge: m.inFlight},
		releasing: make(chan struct{}, maxReleases),
		stop:      make(chan struct{}),
	}
}

// maxReleases bounds the runs of held tasks being released at once: each
// waits for one durable update after another, so many go at once.
const maxReleases = 4096

func (s *Source) start(ctx context.Context, sched Scheduler) {
	s.sched = sched
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.writeCtx, s.writeCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(s.ctx)
	}()
	s.marks.Add(1)
	go func() {
		defer s.marks.Done()
		s.writeOutcomes()
	}()
}

// run connects, recovers, then campaigns for primary and leads while it
// is, until Stop.
func (s *Source) run(ctx context.Context) {
	if !s.connect(ctx) {
		return
	}
	for _, f := range []func(context.Context){s.listen, s.maintain} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			f(ctx)
		}()
	}
	s.retry(ctx, "recovering QUEUED rows", func() error { return s.reconcile(ctx, 0) })
	for ctx.Err() == nil {
		s.retry(ctx, "cleaning up held tasks", func() error { return s.cleanupHeld(ctx) })
		lease, err := s.elector.Campaign(ctx)
		if err != nil {
			return
		}
		s.lead(ctx, lease)
	}
}

// connect opens the pool and reads the table's shape, retrying until
// it works or ctx ends.
func (s *Source) connect(ctx context.Context) bool {
	pools := [2]*pgxpool.Pool{}
	for i, conns := range [2]int32{parallelPolls + 4, 2} {
		pc, err := pgxpool.ParseConfig(s.cfg.DSN)
		if err != nil {
			s.log.Error("outbox: bad connection string", "err", err)
			return false
		}
		pc.MaxConns = conns
		if pools[i], err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			s.log.Error("outbox: bad connection string", "err", err)
			return false
		}
	}
	s.pool, s.leasePool = pools[0], pools[1]
	s.retry(ctx, "reading the outbox table", func() error { return s.introspect(ctx) })
	if ctx.Err() != nil {
		return false
	}
	if s.opts.Elector != nil {
		s.elector = s.opts.Elector(s.cfg.Name)
	} else {
		s.elector = newLeaseElector(s.leasePool, s.q, s.opts.Node, s.opts.Clock, s.log)
	}
	close(s.ready)
	return true
}

// introspect finds the table and the types of the columns whose values
// travel as text.
func (s *Source) introspect(ctx context.Context) error {
	t, _ := parseTable(s.cfg.Table)
	var types columnTypes
	var oid int64
	err := s.pool.QueryRow(ctx, `SELECT n.nspname || '.' || c.relname, c.oid::int8,
	(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = $2 AND NOT a.attisdropped),
	(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = $3 AND NOT a.attisdropped)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`,
		t.String(), s.cfg.Columns.ID, s.cfg.Columns.Status).Scan(&s.table, &oid, &types.id, &types.status)
	if err != nil {
		return fmt.Errorf("table %s (run `boomerang outbox init`?): %w", s.cfg.Table, err)
	}
	s.q, s.tableOID = newQueries(s.cfg, t, types), uint32(oid)
	// Check every statement against the table once, so that a wrong
	// column mapping is reported now, in one place.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, sql := range []string{s.q.writers, s.q.heads, s.q.headsOf, s.q.lockHeads, s.q.lockFree, s.q.queued, s.q.poison,
		s.q.finished, s.q.deleted, s.q.own, s.q.rows, s.q.stale, s.q.lag, s.q.fence, s.q.heartbeat} {
		if _, err := conn.Exec(ctx, "PREPARE boomerang_check AS "+sql); err != nil {
			return fmt.Errorf("table %s does not fit the column mapping: %w", s.cfg.Table, err)
		}
		if _, err := conn.Exec(ctx, "DEALLOCATE boomerang_check"); err != nil {
			return err
		}
	}
	return nil
}

// retry runs f until it succeeds or ctx ends, backing off between
// failures and logging them.
func (s *Source) retry(ctx context.Context, what string, f func() error) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := f()
		if err == nil || ctx.Err() != nil {
			return
		}
		s.log.Error("outbox: "+what+" failed; retrying", "err", err, "in", delay)
		select {
		case <-ctx.Done():
		case <-s.opts.Clock.After(delay):
		}
		delay = min(delay*2, s.cfg.PollInterval*10)
	}
}

// stopAndWait stops the source: polls and maintenance end, then the
// outcomes reported so far are written, then the pool closes.
func (s *Source) stopAndWait(ctx context.Context) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	close(s.stop)
	done := make(chan struct{})
	go func() {
		s.marks.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("outbox: source %s: stopped before writing every outcome (the next start recovers them): %w", s.cfg.Name, ctx.Err())
		s.outcomes.abandon()
		s.writeCancel()
		<-done
	}
	s.writeCancel()
	if s.pool != nil {
		s.pool.Close()
		s.leasePool.Close()
	}
	return err
}

// Stats reports the source's counters.
func (s *Source) Stats() Stats {
	c := &s.metrics.counts
	return Stats{
		Primary: s.primary.Load(), Polls: s.metrics.polls.Load(),
		Polled: c[countPolled].Load(), Dispatched: c[countDispatched].Load(), Queued: c[countQueued].Load(),
		Done: c[countDone].Load(), Error: c[countError].Load(), Stale: c[countStale].Load(),
		InFlight: s.inFlight.len(),
	}
}

// signal wakes whoever waits on ch, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// finished queues a final outcome reported by the scheduler.
func (s *Source) finished(id string, f scheduler.Finished) {
	o := outcome{id: id, task: f.Task.GetId(), ok: f.Delivered, err: f.Error, attempts: int32(f.Task.GetAttempts())}
	if f.Delivered {
		o.attempts++ // the acknowledged attempt is not among the failed ones
	}
	s.outcomes.push(o)
}

// outcome is a final outcome to write to a row.
type outcome struct {
	id       string
	task     uint64
	ok       bool
	err      string
	attempts int32
}

// outcomeQueue holds outcomes until the writer takes them. It grows with
// the tasks that finish faster than rows are written, at most one entry
// per task in flight.
type outcomeQueue struct {
	mu     sync.Mutex
	items  []outcome
	signal chan struct{}
	gone   bool // abandoned at Stop
}

func (q *outcomeQueue) push(o outcome) {
	q.mu.Lock()
	if !q.gone {
		q.items = append(q.items, o)
	}
	q.mu.Unlock()
	signal(q.signal)
}

func (q *outcomeQueue) take(max int) []outcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.items))
	out := q.items[:n:n]
	q.items = q.items[n:]
	return out
}

func (q *outcomeQueue) abandon() {
	q.mu.Lock()
	q.gone, q.items = true, nil
	q.mu.Unlock()
}

// groupSet collects the groups whose gated row finished, for the
// primary's next poll.
type groupSet struct {
	mu     sync.Mutex
	groups map[string]struct{}
	signal chan struct{}
}

func (g *groupSet) add(groups []string) {
	if len(groups) == 0 {
		return
	}
	g.mu.Lock()
	if g.groups == nil {
		g.groups = map[string]struct{}{}
	}
	for _, x := range groups {
		g.groups[x] = struct{}{}
	}
	g.mu.Unlock()
	signal(g.signal)
}

func (g *groupSet) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.groups)
}

func (g *groupSet) take() map[string]struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.groups
	g.groups = nil
	return out
}

// groupLoads counts the rows of each group this node has QUEUED: set by
// the poll that reads the group (the rows it read QUEUED), raised by the
// rows it takes, lowered by each finished row. It only decides when
// a group is polled again (refill): a count off by a few rows, or lost,
// makes a poll come a little early or late, never a wrong one; a full
// poll visits every group anyway.
type groupLoads struct {
	mu sync.Mutex
	n  map[string]int
}

func (g *groupLoads) set(group string, n int) {
	g.mu.Lock()
	if n > 0 {
		g.n[group] = n
	} else {
		delete(g.n, group)
	}
	g.mu.Unlock()
}

func (g *groupLoads) add(group string, n int) {
	g.mu.Lock()
	g.n[group] += n
	g.mu.Unlock()
}

// low reports whether a group has at most n rows QUEUED.
func (g *groupLoads) low(group string, n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n[group] <= n
}

// finish lowers the counts of the groups of finished rows (a group once
// per row) and returns those that have fallen to low or below: the
// groups worth polling again (a group may come more than once).
func (g *groupLoads) finish(groups []string, low int) []string {
	var out []string
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, group := range groups {
		n := g.n[group] - 1
		if n > 0 {
			g.n[group] = n
		} else {
			delete(g.n, group)
		}
		if n <= low {
			out = append(out, group)
		}
	}
	return out
}

// taskSet is the tasks this node queued and has not seen finish.
type taskSet struct {
	mu    sync.Mutex
	ids   map[uint64]struct{}
	gauge prometheus.Gauge
}

func (t *taskSet) add(ids ...uint64) {
	t.mu.Lock()
	for _, id := range ids {
		t.ids[id] = struct{}{}
	}
	t.gauge.Set(float64(len(t.ids)))
	t.mu.Unlock()
}

func (t *taskSet) remove(ids ...uint64) {
	t.mu.Lock()
	for _, id := range ids {
		delete(t.ids, id)
	}
	t.gauge.Set(float64(len(t.ids)))
	t.mu.Unlock()
}

func (t *taskSet) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ids)
}

package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jonboulle/clockwork"
)

// Elector chooses the one primary of a source among the nodes that run
// it. The standalone Elector is a lease row in the source's database; a
// cluster plugs in its own (etcd's election) with Options.Elector. Either
// way the winner's term is then recorded in the source's lease row, and
// every write of a primary is fenced by that row (it reads it FOR KEY
// SHARE and checks holder and term in the same transaction, and a
// takeover locks it FOR UPDATE), so a deposed
// primary's writes fail whatever its clock says. Terms must grow with
// every new primary.
type Elector interface {
	// Campaign blocks until this node is the primary, or ctx ends.
	Campaign(ctx context.Context) (Lease, error)
}

// Lease is one term as primary.
type Lease interface {
	// Term is the fencing token: it grows with every new primary.
	Term() int64
	// Lost is closed when the term ends: the lease could not be renewed
	// in time, another node took it, or Resign was called.
	Lost() <-chan struct{}
	// Resign ends the term at once, so a standby need not wait for the
	// lease to expire.
	Resign(ctx context.Context)
}

// leaseElector is the standalone Elector: the lease row holds the
// primary's node and term and expires LeaseTTL after its last renewal,
// by the database's clock. A node takes an expired row (or its own,
// after a restart) with the next term; the primary renews it every third
// of the TTL and gives up the term once two thirds of it have passed
// without a renewal. Expiry and takeover are decided by one UPDATE, so
// two nodes can never hold the same term.
type leaseElector struct {
	pool   *pgxpool.Pool
	q      *queries
	source string
	node   string
	ttl    time.Duration
	clock  clockwork.Clock
	log    *slog.Logger
}

func newLeaseElector(pool *pgxpool.Pool, q *queries, node string, clock clockwork.Clock, log *slog.Logger) *leaseElector {
	return &leaseElector{pool: pool, q: q, source: q.cfg.Name, node: node, ttl: q.cfg.LeaseTTL, clock: clock, log: log}
}

func interval(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }

func (e *leaseElector) Campaign(ctx context.Context) (Lease, error) {
	for {
		term, err := e.acquire(ctx)
		if err == nil {
			l := &pgLease{e: e, term: term, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
			go l.renew()
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			e.log.Warn("outbox: campaigning for primary failed", "source", e.source, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.clock.After(e.ttl / 4):
		}
	}
}

// acquire takes the lease if it is free; pgx.ErrNoRows when it is not.
func (e *leaseElector) acquire(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, e.ttl)
	defer cancel()
	var term int64
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		// A primary's transaction holds the row FOR KEY SHARE while
		// it writes; wait for it a little, not for a hung one.
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(e.ttl.Milliseconds()/4, 1))); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, e.q.lockLease, e.source); err != nil {
			return err
		}
		return tx.QueryRow(ctx, e.q.acquire, e.source, e.node, interval(e.ttl)).Scan(&term)
	})
	return term, err
}

type pgLease struct {
	e    *leaseElector
	term int64
	lost chan struct{}
	stop chan struct{}
	done chan struct{}

	once   sync.Once // closes lost
	resign sync.Once // closes stop
}

func (l *pgLease) Term() int64           { return l.term }
func (l *pgLease) Lost() <-chan struct{} { return l.lost }

func (l *pgLease) end() { l.once.Do(func() { close(l.lost) }) }

func (l *pgLease) renew() {
	defer close(l.done)
	defer l.end()
	e := l.e
	lastOK := e.clock.Now()
	ticker := e.clock.NewTicker(e.ttl / 3)
	defer ticker.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ticker.Chan():
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.ttl/3)
		tag, err := e.pool.Exec(ctx, e.q.renew, e.source, e.node, interval(e.ttl), l.term)
		cancel()
		switch {
		case err == nil && tag.RowsAffected() == 1:
			lastOK = e.clock.Now()
		case err == nil:
			e.log.Warn("outbox: lease taken over", "source", e.source, "term", l.term)
			return
		case e.clock.Since(lastOK) > e.ttl*2/3:
			e.log.Warn("outbox: lease not renewed in time; stepping down", "source", e.source, "term", l.term, "err", err)
			return
		}
	}
}

func (l *pgLease) Resign(ctx context.Context) {
	l.resign.Do(func() { close(l.stop) })
	<-l.done
	e := l.e
	if _, err := e.pool.Exec(ctx, e.q.resign, e.source, e.node, l.term); err != nil {
		e.log.Warn("outbox: resigning the lease failed; a standby takes over when it expires", "source", e.source, "err", err)
	}
}

package outbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jonboulle/clockwork"
)

// leaseSource is a source with just what the lease and the fence need.
func leaseSource(t *testing.T, cfg Config, pool *pgxpool.Pool, node string) *Source {
	cfg.ensureDefaults()
	s := newSource(cfg, &Options{Node: node, Logger: slog.New(slog.DiscardHandler), Clock: clockwork.NewRealClock()}, newMetrics().source(cfg.Name))
	s.pool, s.leasePool = pool, pool
	s.q = newQueries(cfg, tableName{name: cfg.Table}, columnTypes{id: "bigint", status: "text"})
	s.elector = newLeaseElector(pool, s.q, node, s.opts.Clock, s.log)
	return s
}

// TestLease checks that one node at a time holds the lease, that a
// standby takes it once the primary resigns or stops renewing, with a
// higher term, and that the deposed primary's fenced writes fail.
func TestLease(t *testing.T) {
	cfg := Config{Name: "orders", Target: Target{Client: "admin"}, LeaseTTL: 300 * time.Millisecond}
	pool := newDB(t, &cfg)
	bPool, err := pgxpool.New(context.Background(), cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer bPool.Close()
	a, b := leaseSource(t, cfg, pool, "a"), leaseSource(t, cfg, bPool, "b")
	ctx := context.Background()

	la, err := a.elector.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := b.elector.Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second campaign while the lease is held: %v", err)
	}
	tx, err := a.fencedTx(ctx, la.Term())
	if err != nil {
		t.Fatalf("primary's fenced transaction: %v", err)
	}
	tx.Rollback(ctx)

	la.Resign(ctx)
	<-la.Lost()
	lb, err := b.elector.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term() <= la.Term() {
		t.Fatalf("terms %d then %d, want growing", la.Term(), lb.Term())
	}
	if _, err := a.fencedTx(ctx, la.Term()); !errors.Is(err, ErrDeposed) {
		t.Fatalf("deposed primary's fenced transaction: %v, want ErrDeposed", err)
	}

	// A primary that cannot renew (its connections are gone) steps
	// down, and the standby takes over once the lease expires.
	bPool.Close()
	select {
	case <-lb.Lost():
	case <-time.After(waitLimit):
		t.Fatal("b did not step down")
	}
	la2, err := a.elector.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if la2.Term() <= lb.Term() {
		t.Fatalf("term %d after %d", la2.Term(), lb.Term())
	}
	la2.Resign(ctx)
}

// fixedElector is an Elector that makes its node primary at once, with a
// given term, as a cluster's election would after winning.
type fixedElector struct{ term int64 }

func (e fixedElector) Campaign(context.Context) (Lease, error) {
	return &fixedLease{term: e.term, lost: make(chan struct{})}, nil
}

type fixedLease struct {
	term int64
	lost chan struct{}
	once sync.Once
}

func (l *fixedLease) Term() int64                { return l.term }
func (l *fixedLease) Lost() <-chan struct{}      { return l.lost }
func (l *fixedLease) Resign(ctx context.Context) { l.once.Do(func() { close(l.lost) }) }

// TestPluggedElector runs a source under an Elector other than the lease
// row: the winner's term is recorded in the lease row, which fences the
// polls as before.
func TestPluggedElector(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	exec(t, db, "INSERT INTO boomerang_outbox_lease VALUES ('orders', 'old-primary', 41, now() + interval '1 hour')")
	insert(t, db, "g", "x")
	startNode(t, cfg, nodeOptions{elector: func(string) Elector { return fixedElector{term: 42} }})
	waitStatus(t, db, map[string]int{"DONE": 1})
	var holder string
	var term int64
	if err := db.QueryRow(context.Background(), "SELECT holder, term FROM boomerang_outbox_lease").Scan(&holder, &term); err != nil {
		t.Fatal(err)
	}
	if holder != "node-a" || term != 42 {
		t.Fatalf("lease row %s/%d, want node-a/42", holder, term)
	}
}

package outbox

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boomerangd/boomerang/internal/pgtest"
)

var (
	benchRows   = flag.Int("outbox.rows", 100_000, "rows the throughput benchmarks move")
	benchGroups = flag.Int("outbox.groups", 1000, "groups the rows are spread over")
	benchRate   = flag.Int("outbox.rate", 5000, "rows inserted per second by BenchmarkLag")
	benchFor    = flag.Duration("outbox.for", 20*time.Second, "how long BenchmarkLag inserts")
	benchDepth  = flag.Int("outbox.depth", DefaultGroupDepth, "the source's group depth")
	benchStats  = flag.Bool("outbox.pgstats", false, "print PostgreSQL's statement statistics (pg_stat_statements) at the end")
)

// benchDB is a durable server (fsync and synchronous commit on) with an
// initialised database, for one benchmark.
func benchDB(b *testing.B, cfg *Config) *pgxpool.Pool {
	b.Helper()
	cfg.PollInterval, cfg.LeaseTTL = DefaultPollInterval, DefaultLeaseTTL
	opts := pgtest.Options{Durable: true}
	if *benchStats {
		opts.Settings = map[string]string{"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}
	}
	s := pgtest.Start(b, opts)
	cfg.DSN = s.Database(b)
	if err := Init(context.Background(), *cfg); err != nil {
		b.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), cfg.DSN+"&pool_max_conns=16")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if *benchStats {
		if _, err := pool.Exec(context.Background(), "CREATE EXTENSION pg_stat_statements"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { printStatements(b, pool) })
	}
	return pool
}

// printStatements logs the statements that took the most of the
// server's time, with their calls and rows.
func printStatements(b *testing.B, db *pgxpool.Pool) {
	rows, err := db.Query(context.Background(), `SELECT round(total_exec_time)::int8, calls, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 140)
FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15`)
	if err != nil {
		b.Error(err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var ms, calls, n int64
		var query string
		if err := rows.Scan(&ms, &calls, &n, &query); err != nil {
			b.Error(err)
			return
		}
		b.Logf("%7d ms %7d calls %8d rows  %s", ms, calls, n, query)
	}
}

// fill inserts rows round-robin over the groups, with COPY.
func fill(b *testing.B, db *pgxpool.Pool, rows, groups int) {
	b.Helper()
	src := pgx.CopyFromSlice(rows, func(i int) ([]any, error) {
		return []any{fmt.Sprint("group-", i%groups), []byte(fmt.Sprintf("row %d", i))}, nil
	})
	if _, err := db.CopyFrom(context.Background(), pgx.Identifier{"boomerang_outbox"}, []string{"group_key", "payload"}, src); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), "VACUUM ANALYZE boomerang_outbox"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOutbox moves -outbox.rows PENDING rows in -outbox.groups groups
// through the outbox to a raw TCP receiver that acknowledges at once:
// rows/s from the source's start to the last row marked DONE, each row
// delivered in its group's order. The baseline is a loop that takes
// PENDING rows with SELECT … FOR UPDATE SKIP LOCKED and marks them DONE,
// doing nothing else, on the same kind of server.
func BenchmarkOutbox(b *testing.B) {
	b.Run("outbox", func(b *testing.B) {
		rcv := startReceiver(b)
		cfg := sourceConfig(rcv)
		cfg.GroupDepth = *benchDepth
		db := benchDB(b, &cfg)
		fill(b, db, *benchRows, *benchGroups)
		b.ResetTimer()
		start := time.Now()
		n := startNode(b, cfg, nodeOptions{})
		// "rows/s" counts from before the node starts; "rows/s-running"
		// from the first row done, past the node's start and first poll.
		eventuallyB(b, func() bool { return n.src.Stats().Done > 0 })
		first, firstAt := n.src.Stats().Done, time.Now()
		eventuallyB(b, func() bool { return n.src.Stats().Done == uint64(*benchRows) })
		end := time.Now()
		b.StopTimer()
		b.ReportMetric(float64(*benchRows)/end.Sub(start).Seconds(), "rows/s")
		b.ReportMetric(float64(uint64(*benchRows)-first)/end.Sub(firstAt).Seconds(), "rows/s-running")
		b.ReportMetric(0, "ns/op")
		if rcv.count() != *benchRows {
			b.Fatalf("%d deliveries, want %d", rcv.count(), *benchRows)
		}
	})
	b.Run("skip-locked-baseline", func(b *testing.B) {
		cfg := Config{Name: "orders", Target: Target{Client: "admin"}}
		db := benchDB(b, &cfg)
		fill(b, db, *benchRows, *benchGroups)
		b.ResetTimer()
		start := time.Now()
		var done atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					n, err := markBatch(db, 1000)
					if err != nil {
						b.Error(err)
						return
					}
					if n == 0 {
						return
					}
					done.Add(n)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		if done.Load() != int64(*benchRows) {
			b.Fatalf("marked %d rows, want %d", done.Load(), *benchRows)
		}
		b.ReportMetric(float64(*benchRows)/elapsed.Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
}

// markBatch is the baseline's unit of work: take up to n PENDING rows,
// skipping locked ones, and mark them DONE.
func markBatch(db *pgxpool.Pool, n int) (int64, error) {
	var marked int64
	err := pgx.BeginFunc(context.Background(), db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(context.Background(), `UPDATE boomerang_outbox SET status = 'DONE' WHERE id IN (
			SELECT id FROM boomerang_outbox WHERE status = 'PENDING' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)`, n)
		marked = tag.RowsAffected()
		return err
	})
	return marked, err
}

// BenchmarkLag inserts -outbox.rate rows per second in -outbox.groups
// groups for -outbox.for while the outbox runs, and reports the lag (age
// of the oldest PENDING row) sampled every 100 ms: its median and
// maximum, and how long the last row took to be delivered once the
// inserts stopped.
func BenchmarkLag(b *testing.B) {
	rcv := startReceiver(b)
	cfg := sourceConfig(rcv)
	cfg.GroupDepth = *benchDepth
	db := benchDB(b, &cfg)
	n := startNode(b, cfg, nodeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), *benchFor)
	defer cancel()
	var inserted atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		perTick := *benchRate / 100
		for i := 0; ; {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows := make([][]any, perTick)
			for j := range rows {
				rows[j] = []any{fmt.Sprint("group-", i%*benchGroups), []byte("x")}
				i++
			}
			if _, err := db.CopyFrom(context.Background(), pgx.Identifier{"boomerang_outbox"}, []string{"group_key", "payload"}, pgx.CopyFromRows(rows)); err != nil {
				b.Error(err)
				return
			}
			inserted.Add(int64(perTick))
		}
	})
	var lags []float64
	sample := time.NewTicker(100 * time.Millisecond)
	defer sample.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-sample.C:
			var lag float64
			if err := db.QueryRow(context.Background(), n.src.q.lag).Scan(&lag); err != nil {
				b.Fatal(err)
			}
			lags = append(lags, lag)
		}
	}
	wg.Wait()
	stopped := time.Now()
	eventuallyB(b, func() bool { return n.src.Stats().Done == uint64(inserted.Load()) })
	slices.Sort(lags)
	b.ReportMetric(float64(inserted.Load())/benchFor.Seconds(), "rows/s")
	b.ReportMetric(lags[len(lags)/2]*1000, "lag-p50-ms")
	b.ReportMetric(lags[len(lags)-1]*1000, "lag-max-ms")
	b.ReportMetric(float64(time.Since(stopped).Milliseconds()), "drain-ms")
	b.ReportMetric(0, "ns/op")
}

func eventuallyB(b *testing.B, cond func() bool) {
	b.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Minute)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			b.Fatal("timed out")
		}
	}
}

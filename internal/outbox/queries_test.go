package outbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestUpdatesProbeByID checks the plans of the updates that mark a
// poll's rows (QUEUED, ERROR) and the outcome writer's, under statistics
// taken while every row was PENDING (as after a bulk insert): on a table
// of some size each must find a batch's rows by their ids, not read every
// row the node has QUEUED, or the whole table, for each batch.
func TestUpdatesProbeByID(t *testing.T) {
	cfg := Config{Name: "orders", Target: Target{Client: "admin"}}
	db := newDB(t, &cfg)
	exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload) SELECT 'g' || (i % 100), 'x' FROM generate_series(1, 100000) i")
	exec(t, db, "ANALYZE boomerang_outbox")
	exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', owner = 'node-a', task_id = id WHERE id % 20 = 0")
	cfg.ensureDefaults()
	table, err := parseTable(cfg.Table)
	if err != nil {
		t.Fatal(err)
	}
	q := newQueries(cfg, table, columnTypes{id: "bigint", status: "text"})
	for _, n := range []int{100, 1000, outcomeBatch} {
		var queued, pending, errs []string
		var tasks []int64
		var oks []bool
		var attempts []int32
		for id := 20; len(queued) < n; id += 20 {
			queued, pending = append(queued, strconv.Itoa(id)), append(pending, strconv.Itoa(id+1))
			tasks, oks = append(tasks, int64(id)), append(oks, true)
			errs, attempts = append(errs, ""), append(attempts, 1)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			checkProbesByID(t, db, mode, fmt.Sprintf("the outcome update of %d rows", n), q.finished, queued, "node-a", tasks, oks, errs, attempts)
			checkProbesByID(t, db, mode, fmt.Sprintf("the QUEUED update of %d rows", n), q.queued, pending, tasks, "node-a")
			checkProbesByID(t, db, mode, fmt.Sprintf("the ERROR update of %d rows", n), q.poison, pending, errs)
		}
	}
}

// checkProbesByID checks that statement sql, with args, planned in
// plan_cache_mode mode, reads the table by its primary key only, without
// nested loops.
func checkProbesByID(t *testing.T, db *pgxpool.Pool, mode, what, sql string, args ...any) {
	t.Helper()
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for _, set := range []string{noNestedLoops, "SET LOCAL plan_cache_mode = " + mode} {
		if _, err := tx.Exec(context.Background(), set); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "boomerang_outbox_pkey") || strings.Contains(text, "boomerang_queued") || strings.Contains(text, "Seq Scan on boomerang_outbox") || strings.Contains(text, "Nested Loop") {
		t.Errorf("%s (%s) does not find them by id:\n%s", what, mode, text)
	}
}

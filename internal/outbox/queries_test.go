package outbox

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestOutcomesProbeByID checks the plan of the outcome writer's update
// under statistics taken while no row was QUEUED (as after a bulk
// insert): on a table of some size it must find a batch's rows by their
// ids, not read every row the node has QUEUED for each batch.
func TestOutcomesProbeByID(t *testing.T) {
	cfg := Config{Name: "orders", Target: Target{Client: "admin"}}
	db := newDB(t, &cfg)
	exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload) SELECT 'g' || (i % 100), 'x' FROM generate_series(1, 100000) i")
	exec(t, db, "ANALYZE boomerang_outbox")
	exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', owner = 'node-a', task_id = id WHERE id % 100 = 0")
	cfg.ensureDefaults()
	table, err := parseTable(cfg.Table)
	if err != nil {
		t.Fatal(err)
	}
	q := newQueries(cfg, table, columnTypes{id: "bigint", status: "text"})
	var ids, errs []string
	var tasks []int64
	var oks []bool
	var attempts []int32
	for id := 20; id <= 2000; id += 20 {
		ids, tasks, oks = append(ids, strconv.Itoa(id)), append(tasks, int64(id)), append(oks, true)
		errs, attempts = append(errs, ""), append(attempts, 1)
	}
	rows, err := db.Query(context.Background(), "EXPLAIN "+q.finished, ids, "node-a", tasks, oks, errs, attempts)
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
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "boomerang_outbox_pkey") || strings.Contains(text, "boomerang_queued") {
		t.Errorf("the outcome update does not find its rows by id:\n%s", text)
	}
}

package outbox

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestMappedTable points a source at an existing table with its own
// names and types (a uuid key, an enum status, a text payload, no
// target, mode, attempts or error columns), lets `outbox init` add what
// it lacks, and deletes rows once delivered.
func TestMappedTable(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	cfg.DSN = pg.Database(t)
	cfg.Table = "app.jobs"
	cfg.DeleteDone = true
	cfg.Columns = Columns{ID: "job_id", Group: "aggregate", Sequence: "version", CreatedAt: "inserted", Status: "state",
		Payload: "body", Target: NoColumn, Mode: NoColumn, Attempts: NoColumn, LastError: NoColumn}
	ctx := context.Background()
	db, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec(t, db, "CREATE SCHEMA app")
	exec(t, db, "CREATE TYPE app.job_state AS ENUM ('PENDING', 'QUEUED', 'DONE', 'ERROR')")
	exec(t, db, `CREATE TABLE app.jobs (
		job_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
		aggregate text NOT NULL,
		version bigint NOT NULL,
		inserted timestamptz NOT NULL DEFAULT now(),
		state app.job_state NOT NULL DEFAULT 'PENDING',
		body text NOT NULL)`)
	for v := 5; v >= 1; v-- {
		for _, agg := range []string{"cart-1", "cart-2"} {
			exec(t, db, "INSERT INTO app.jobs (aggregate, version, body) VALUES ($1, $2, $3)", agg, v, fmt.Sprintf("%s v%d", agg, v))
		}
	}
	if err := Init(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	startNode(t, cfg, nodeOptions{})
	eventually(t, "every row delivered and deleted", func() bool {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM app.jobs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	got := rcv.delivered()
	for _, agg := range []string{"cart-1", "cart-2"} {
		want := fmt.Sprintf("%[1]s v1,%[1]s v2,%[1]s v3,%[1]s v4,%[1]s v5", agg)
		if join(got[agg]) != want {
			t.Errorf("%s delivered %v, want %s", agg, got[agg], want)
		}
	}
}

// TestInitSQLIsIdempotent runs init twice and checks the default table
// numbers its rows.
func TestInitSQLIsIdempotent(t *testing.T) {
	cfg := Config{Name: "orders", Target: Target{Client: "admin"}}
	db := newDB(t, &cfg)
	if err := Init(context.Background(), cfg); err != nil {
		t.Fatalf("second init: %v", err)
	}
	insert(t, db, "g", "x")
	if got := statuses(t, db)["PENDING"]; got != 1 {
		t.Fatalf("%d PENDING rows", got)
	}
	var seq int64
	if err := db.QueryRow(context.Background(), "SELECT sequence FROM boomerang_outbox").Scan(&seq); err != nil || seq != 1 {
		t.Fatalf("the trigger numbered the row %d (%v), want 1", seq, err)
	}
}

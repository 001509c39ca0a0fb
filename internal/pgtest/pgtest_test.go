package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestServerRunsQueries(t *testing.T) {
	s := Start(t, Options{})
	dsn := s.Database(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
		t.Fatalf("SELECT = %d, %v", n, err)
	}
	if s.Database(t) == dsn {
		t.Fatal("two databases share a name")
	}
}

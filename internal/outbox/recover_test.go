package outbox

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/server"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TestRecoversOutcomesLostInACrash puts finished rows back to QUEUED, as
// they are when the process dies between a task's final outcome and the
// row's update, and starts the node again: rows whose task has a dead
// letter become ERROR with its error, the others DONE.
func TestRecoversOutcomesLostInACrash(t *testing.T) {
	rcv := startReceiver(t)
	rcv.setFail(func(d *boomerangv1.Delivery) bool { return string(d.Payload) == "bad" })
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	for _, p := range []string{"a", "bad", "b"} {
		insert(t, db, "g"+p, p)
	}
	dir := newDataDir(t)
	n := startNode(t, cfg, nodeOptions{dataDir: dir})
	waitStatus(t, db, map[string]int{"DONE": 2, "ERROR": 1})
	var wantErr string
	if err := db.QueryRow(context.Background(), "SELECT last_error FROM boomerang_outbox WHERE status = 'ERROR'").Scan(&wantErr); err != nil {
		t.Fatal(err)
	}
	n.stop()
	exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', last_error = NULL")

	startNode(t, cfg, nodeOptions{dataDir: dir})
	waitStatus(t, db, map[string]int{"DONE": 2, "ERROR": 1})
	var gotErr string
	if err := db.QueryRow(context.Background(), "SELECT last_error FROM boomerang_outbox WHERE status = 'ERROR' AND group_key = 'gbad'").Scan(&gotErr); err != nil {
		t.Fatal(err)
	}
	if gotErr != wantErr {
		t.Errorf("recovered error %q, want %q", gotErr, wantErr)
	}
	if rcv.count() != 4 { // a, b, and bad twice: nothing delivered again
		t.Errorf("%d deliveries, want 4", rcv.count())
	}
}

// TestHeldTasks leaves held tasks behind, as a crash between registering
// and marking rows does: one whose row stayed PENDING is cancelled and
// the row dispatched anew, one whose row was marked is released.
func TestHeldTasks(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	insert(t, db, "g1", "orphaned")
	insert(t, db, "g2", "marked")
	var orphan, marked uint64
	hold := func(srv *server.Server, id string) uint64 {
		v, _, err := srv.Scheduler().Register(context.Background(), scheduler.RegisterRequest{
			Client: "admin", Payload: []byte("held " + id), At: time.Now().Add(holdFor), Callback: rcv.callback(),
			IdempotencyKey: idempotencyKey(cfg.Name, "", id),
		})
		if err != nil {
			t.Fatal(err)
		}
		return v.Task.Id
	}
	n := startNode(t, cfg, nodeOptions{before: func(srv *server.Server) {
		orphan, marked = hold(srv, "1"), hold(srv, "2")
		exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', task_id = $1, owner = 'node-a', queued_at = now() WHERE id = 2", int64(marked))
	}})
	waitStatus(t, db, map[string]int{"DONE": 2})
	got := rcv.delivered()
	if rcv.count() != 2 || join(got[""]) != "held 2" || join(got["g1"]) != "orphaned" {
		t.Fatalf("delivered %v, want the marked task and row 1 once each", got)
	}
	if _, err := n.srv.Scheduler().Get(context.Background(), admin, orphan); !errors.Is(err, scheduler.ErrNotFound) {
		t.Errorf("orphaned held task: %v, want it cancelled", err)
	}
	var task int64
	if err := db.QueryRow(context.Background(), "SELECT task_id FROM boomerang_outbox WHERE id = 1").Scan(&task); err != nil {
		t.Fatal(err)
	}
	if uint64(task) == orphan {
		t.Error("row 1 kept the cancelled task")
	}
}

// TestStaleRows takes rows QUEUED by a node that has been silent longer
// than StaleAfter back to PENDING and delivers them; rows of a node still
// seen stay. A deposed primary cannot do it.
func TestStaleRows(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	cfg.StaleAfter = time.Second
	db := newDB(t, &cfg)
	for i, owner := range []string{"gone", "gone", "alive"} {
		insert(t, db, "g"+strconv.Itoa(i), owner)
	}
	exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', owner = convert_from(payload, 'UTF8'), task_id = 42, queued_at = now() - interval '1 hour'")
	exec(t, db, "INSERT INTO boomerang_outbox_node VALUES ('orders', 'gone', now() - interval '1 hour'), ('orders', 'alive', now() + interval '1 hour')")
	n := startNode(t, cfg, nodeOptions{})
	waitStatus(t, db, map[string]int{"DONE": 2, "QUEUED": 1})
	if st := n.src.Stats(); st.Stale != 2 {
		t.Fatalf("stats %+v, want 2 stale", st)
	}

	// A term that is not the lease row's changes nothing.
	exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', owner = 'gone', queued_at = now() - interval '1 hour' WHERE status = 'DONE'")
	var term int64
	if err := db.QueryRow(context.Background(), "SELECT term FROM boomerang_outbox_lease").Scan(&term); err != nil {
		t.Fatal(err)
	}
	if _, err := n.src.recoverStale(context.Background(), term-1); !errors.Is(err, ErrDeposed) {
		t.Fatalf("recoverStale with an old term: %v, want ErrDeposed", err)
	}
}

// TestRowSentAgain sets a delivered row back to PENDING: it is delivered
// again as a new task, although the scheduler still remembers the key
// of the first.
func TestRowSentAgain(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	insert(t, db, "g", "twice")
	startNode(t, cfg, nodeOptions{})
	waitStatus(t, db, map[string]int{"DONE": 1})
	var first int64
	if err := db.QueryRow(context.Background(), "SELECT task_id FROM boomerang_outbox").Scan(&first); err != nil {
		t.Fatal(err)
	}
	exec(t, db, "UPDATE boomerang_outbox SET status = 'PENDING'")
	eventually(t, "a second delivery", func() bool { return rcv.count() == 2 })
	waitStatus(t, db, map[string]int{"DONE": 1})
	var second int64
	if err := db.QueryRow(context.Background(), "SELECT task_id FROM boomerang_outbox").Scan(&second); err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("the row was sent again as the same task %d", first)
	}
}

// TestRowsAheadAfterACrash leaves what a crash with several rows of a
// group registered ahead leaves: held tasks for rows a poll marked QUEUED
// and committed (not yet released), and for rows of a poll that never
// committed. The marked ones are released in order, the others cancelled
// and their rows dispatched anew behind them: each row is delivered once,
// in order.
func TestRowsAheadAfterACrash(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	const rows, marked = 6, 3
	for _, p := range payloads("", rows) {
		insert(t, db, "g", p)
	}
	var tasks []uint64
	n := startNode(t, cfg, nodeOptions{before: func(srv *server.Server) {
		var reqs []scheduler.RegisterRequest
		for i, p := range payloads("", rows-1) {
			reqs = append(reqs, scheduler.RegisterRequest{
				Client: "admin", Group: "g", Payload: []byte(p), At: time.Now().Add(holdFor), Callback: rcv.callback(),
				Mode: storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR, IdempotencyKey: idempotencyKey(cfg.Name, "", strconv.Itoa(i+1)),
			})
		}
		res, err := srv.Scheduler().RegisterBatch(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			tasks = append(tasks, r.View.Task.Id)
			if i < marked {
				exec(t, db, "UPDATE boomerang_outbox SET status = 'QUEUED', task_id = $1, owner = 'node-a', queued_at = now() WHERE id = $2",
					int64(r.View.Task.Id), i+1)
			}
		}
	}})
	waitStatus(t, db, map[string]int{"DONE": rows})
	if got := join(rcv.delivered()["g"]); got != join(payloads("", rows)) || rcv.count() != rows {
		t.Fatalf("delivered %s in %d deliveries, want each row once, in order", got, rcv.count())
	}
	for _, orphan := range tasks[marked:] {
		if _, err := n.srv.Scheduler().Get(context.Background(), admin, orphan); !errors.Is(err, scheduler.ErrNotFound) {
			t.Errorf("held task %d of an uncommitted poll: %v, want it cancelled", orphan, err)
		}
	}
	var kept int
	orphans := []int64{int64(tasks[marked]), int64(tasks[marked+1])}
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM boomerang_outbox WHERE task_id = ANY($1)", orphans).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 0 {
		t.Errorf("%d rows kept a cancelled task", kept)
	}
}

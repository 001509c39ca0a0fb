package outbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// TestDispatchesEachGroupInOrder inserts rows of several groups, some
// before and some after the source starts, and checks that every row is
// delivered once, DONE, in its group's order, with at most one row of a
// group in flight.
func TestDispatchesEachGroupInOrder(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	const groups, perGroup = 8, 20
	for i := range perGroup / 2 {
		for g := range groups {
			insert(t, db, fmt.Sprint("g", g), fmt.Sprintf("%03d", i))
		}
	}
	n := startNode(t, cfg, nodeOptions{})
	for i := perGroup / 2; i < perGroup; i++ {
		for g := range groups {
			insert(t, db, fmt.Sprint("g", g), fmt.Sprintf("%03d", i))
		}
	}
	insert(t, db, "", "loose") // ungrouped: dispatched without order
	waitStatus(t, db, map[string]int{"DONE": groups*perGroup + 1})

	got := rcv.delivered()
	for g := range groups {
		if want := join(payloads("", perGroup)); join(got[fmt.Sprint("g", g)]) != want {
			t.Errorf("group g%d delivered %v, want %v", g, got[fmt.Sprint("g", g)], want)
		}
	}
	if rcv.count() != groups*perGroup+1 {
		t.Errorf("%d deliveries, want %d", rcv.count(), groups*perGroup+1)
	}
	if o := rcv.overlaps(); len(o) > 0 {
		t.Errorf("groups with two rows in flight: %v", o)
	}
	st := n.src.Stats()
	if !st.Primary || st.Queued != groups*perGroup+1 || st.Done != groups*perGroup+1 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
	var queued, tasks int
	if err := db.QueryRow(context.Background(),
		"SELECT count(*), count(DISTINCT task_id) FROM boomerang_outbox WHERE owner = 'node-a' AND attempts = 1").Scan(&queued, &tasks); err != nil {
		t.Fatal(err)
	}
	if queued != groups*perGroup+1 || tasks != queued {
		t.Errorf("%d rows record their task and one attempt, %d distinct tasks; want %d", queued, tasks, groups*perGroup+1)
	}
}

// TestOutOfOrderCommits has transactions take their rows' places in
// one order and commit in another: a row is never delivered before a
// row of its group ordered earlier, even while that one is still
// uncommitted.
func TestOutOfOrderCommits(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	ctx := context.Background()
	n := startNode(t, cfg, nodeOptions{})

	// A deterministic case first: the earlier row's transaction stays
	// open while a later row commits and the source polls.
	early, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Rollback(ctx)
	if _, err := early.Exec(ctx, "INSERT INTO boomerang_outbox (group_key, payload) VALUES ('held', 'first')"); err != nil {
		t.Fatal(err)
	}
	insert(t, db, "held", "second")
	polls := n.src.Stats().Polls
	eventually(t, "polls", func() bool { return n.src.Stats().Polls > polls+5 })
	if got := rcv.delivered()["held"]; len(got) != 0 {
		t.Fatalf("delivered %v while an earlier row was uncommitted", got)
	}
	if err := early.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, db, map[string]int{"DONE": 2})
	if got := join(rcv.delivered()["held"]); got != "first,second" {
		t.Fatalf("held group delivered %s", got)
	}

	// A long transaction that writes elsewhere holds nothing back.
	exec(t, db, "CREATE TABLE elsewhere (x int)")
	long, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Rollback(ctx)
	if _, err := long.Exec(ctx, "INSERT INTO elsewhere VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	insert(t, db, "other", "x")
	waitStatus(t, db, map[string]int{"DONE": 3})
	if err := long.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Then many transactions per group, committed in a shuffled order.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	const groups, perGroup = 6, 12
	var txs []pgx.Tx
	for i := range perGroup {
		for g := range groups {
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO boomerang_outbox (group_key, payload) VALUES ($1, $2)",
				fmt.Sprint("s", g), []byte(fmt.Sprintf("%03d", i))); err != nil {
				t.Fatal(err)
			}
			txs = append(txs, tx)
		}
	}
	rng.Shuffle(len(txs), func(i, j int) { txs[i], txs[j] = txs[j], txs[i] })
	for i, tx := range txs {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			// Let the source poll between some commits.
			polls := n.src.Stats().Polls
			eventually(t, "a poll", func() bool { return n.src.Stats().Polls > polls })
		}
	}
	waitStatus(t, db, map[string]int{"DONE": 3 + groups*perGroup})
	got := rcv.delivered()
	for g := range groups {
		if want := join(payloads("", perGroup)); join(got[fmt.Sprint("s", g)]) != want {
			t.Errorf("group s%d delivered %v, want %v", g, got[fmt.Sprint("s", g)], want)
		}
	}
}

// TestErrorModes runs a failing row in a BLOCK_ON_ERROR group and in a
// NEXT_ON_ERROR group: the first halts its group (and only it) until the
// row is resolved in the table, the second goes on.
func TestErrorModes(t *testing.T) {
	rcv := startReceiver(t)
	rcv.setFail(func(d *boomerangv1.Delivery) bool { return string(d.Payload) == "bad" })
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	for _, g := range []string{"block", "next"} {
		mode := "BLOCK_ON_ERROR"
		if g == "next" {
			mode = "NEXT_ON_ERROR"
		}
		for _, p := range []string{"before", "bad", "after"} {
			exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload, dispatch_mode) VALUES ($1, $2, $3)", g, []byte(p), mode)
		}
	}
	startNode(t, cfg, nodeOptions{})
	waitStatus(t, db, map[string]int{"DONE": 3, "ERROR": 2, "PENDING": 1})

	var msg string
	var attempts int
	if err := db.QueryRow(context.Background(),
		"SELECT last_error, attempts FROM boomerang_outbox WHERE group_key = 'block' AND status = 'ERROR'").Scan(&msg, &attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || msg == "" {
		t.Errorf("ERROR row: %d attempts, error %q; want 2 and the receiver's refusal", attempts, msg)
	}
	// Other work flows while the group stays blocked.
	insert(t, db, "other", "x")
	waitStatus(t, db, map[string]int{"DONE": 4})
	if got := statuses(t, db)["PENDING"]; got != 1 {
		t.Fatalf("the blocked group's next row moved: %d PENDING", got)
	}
	// Replaying the row in the table (the receiver is fixed) unblocks
	// the group, in order.
	rcv.setFail(nil)
	exec(t, db, "UPDATE boomerang_outbox SET status = 'PENDING' WHERE status = 'ERROR' AND group_key = 'block'")
	waitStatus(t, db, map[string]int{"DONE": 6, "ERROR": 1})
	got := rcv.delivered()
	if join(got["block"]) != "before,bad,after" || join(got["next"]) != "before,after" {
		t.Fatalf("delivered %v", got)
	}
}

// TestPoisonRows sends rows that can never become tasks to ERROR with a
// message saying why, and keeps going.
func TestPoisonRows(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	n := startNode(t, cfg, nodeOptions{})
	exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload) VALUES ('g', $1)", make([]byte, 2<<20))
	exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload, target) VALUES ('g', 'x', 'nowhere')")
	exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload) VALUES ('g', 'fine')")
	waitStatus(t, db, map[string]int{"DONE": 1, "ERROR": 2})
	rows, err := db.Query(context.Background(), "SELECT last_error FROM boomerang_outbox WHERE status = 'ERROR' ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	want := []string{"scheduler: invalid payload: must be at most 1048576 bytes, got 2097152", `outbox: unknown target "nowhere"`}
	if join(msgs) != join(want) {
		t.Fatalf("errors %q, want %q", msgs, want)
	}
	if st := n.src.Stats(); st.Error != 2 || st.Done != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRowsRegisteredAhead holds a group's first delivery: the rows
// behind it are registered into Boomerang up to GroupDepth, and no
// further, and once it goes the group is delivered in order, one row at
// a time.
func TestRowsRegisteredAhead(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	cfg.GroupDepth = 4
	db := newDB(t, &cfg)
	const rows = 30
	for _, p := range payloads("", rows) {
		insert(t, db, "g", p)
	}
	insert(t, db, "h", "other")
	n := startNode(t, cfg, nodeOptions{})
	let := rcv.hold(t, "000")
	waitStatus(t, db, map[string]int{"QUEUED": cfg.GroupDepth, "DONE": 1})
	// Three more polls see the group full and take nothing.
	polls := n.src.Stats().Polls
	eventually(t, "three more polls", func() bool { return n.src.Stats().Polls >= polls+3 })
	if got := statuses(t, db)["QUEUED"]; got != cfg.GroupDepth {
		t.Fatalf("%d rows QUEUED with the group's head held, want %d", got, cfg.GroupDepth)
	}
	let()
	waitStatus(t, db, map[string]int{"DONE": rows + 1})
	if got := rcv.delivered(); join(got["g"]) != join(payloads("", rows)) {
		t.Fatalf("delivered %v, want the rows in order", got["g"])
	}
	if o := rcv.overlaps(); len(o) > 0 {
		t.Errorf("groups with two rows in flight: %v", o)
	}
	if rcv.count() != rows+1 {
		t.Errorf("%d deliveries, want %d", rcv.count(), rows+1)
	}
}

// TestGroupRefilledInBatches runs one group with no full polls after the
// first: each refill comes from finished rows, and waits until at most a
// quarter of the group's depth is left QUEUED, so that one poll queues
// several rows of the group (one transaction: they share their
// queued_at) instead of one row per finished row.
func TestGroupRefilledInBatches(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	cfg.GroupDepth, cfg.PollInterval = 4, time.Hour
	db := newDB(t, &cfg)
	const rows = 24
	for _, p := range payloads("", rows) {
		insert(t, db, "g", p)
	}
	startNode(t, cfg, nodeOptions{})
	waitStatus(t, db, map[string]int{"DONE": rows})
	if got := rcv.delivered(); join(got["g"]) != join(payloads("", rows)) {
		t.Fatalf("delivered %v, want the rows in order", got["g"])
	}
	var polls, single int
	if err := db.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE n = 1)
FROM (SELECT count(*) AS n FROM boomerang_outbox GROUP BY queued_at) p`).Scan(&polls, &single); err != nil {
		t.Fatal(err)
	}
	// The last refill may find a single row left.
	if single > 1 {
		t.Errorf("%d of the %d polls that queued rows queued a single row", single, polls)
	}
}

// A poll's groups are released together: one UpdateBatch per poll, not
// one per group.
func TestPollReleasesItsGroupsTogether(t *testing.T) {
	rcv := startReceiver(t)
	cfg := sourceConfig(rcv)
	cfg.PollInterval = time.Hour
	db := newDB(t, &cfg)
	const groups = 40
	for g := range groups {
		for _, p := range payloads("", 2) {
			insert(t, db, fmt.Sprint("g", g), p)
		}
	}
	var updates atomic.Int64
	startNode(t, cfg, nodeOptions{wrap: func(s Scheduler) Scheduler { return &countingUpdates{Scheduler: s, n: &updates} }})
	waitStatus(t, db, map[string]int{"DONE": 2 * groups})
	var polls int
	if err := db.QueryRow(context.Background(), `SELECT count(DISTINCT queued_at) FROM boomerang_outbox`).Scan(&polls); err != nil {
		t.Fatal(err)
	}
	if n := updates.Load(); n > int64(polls) {
		t.Errorf("%d batch updates for %d polls that queued rows of %d groups", n, polls, groups)
	}
}

type countingUpdates struct {
	Scheduler
	n *atomic.Int64
}

func (c *countingUpdates) UpdateBatch(ctx context.Context, caller scheduler.Caller, reqs []scheduler.UpdateRequest) ([]scheduler.UpdateResult, error) {
	c.n.Add(1)
	return c.Scheduler.UpdateBatch(ctx, caller, reqs)
}

// TestBlockOnErrorBehindRowsAhead mixes modes in one group: NEXT_ON_ERROR
// rows are registered ahead, but nothing is registered behind a
// BLOCK_ON_ERROR row while it is in flight, so its failure stops the
// group before anything behind it runs; replaying it in the table goes
// on in order.
func TestBlockOnErrorBehindRowsAhead(t *testing.T) {
	rcv := startReceiver(t)
	rcv.setFail(func(d *boomerangv1.Delivery) bool { return string(d.Payload) == "c" })
	cfg := sourceConfig(rcv)
	db := newDB(t, &cfg)
	for _, r := range [][2]string{{"a", "NEXT_ON_ERROR"}, {"b", "NEXT_ON_ERROR"}, {"c", "BLOCK_ON_ERROR"}, {"d", "NEXT_ON_ERROR"}, {"e", "NEXT_ON_ERROR"}} {
		exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload, dispatch_mode) VALUES ('m', $1, $2)", []byte(r[0]), r[1])
	}
	n := startNode(t, cfg, nodeOptions{})
	waitStatus(t, db, map[string]int{"DONE": 2, "ERROR": 1, "PENDING": 2})
	polls := n.src.Stats().Polls
	eventually(t, "three more polls", func() bool { return n.src.Stats().Polls >= polls+3 })
	if got := statuses(t, db); got["PENDING"] != 2 || join(rcv.delivered()["m"]) != "a,b" {
		t.Fatalf("the blocked group moved on: rows %v, delivered %v", got, rcv.delivered())
	}
	rcv.setFail(nil)
	exec(t, db, "UPDATE boomerang_outbox SET status = 'PENDING' WHERE status = 'ERROR'")
	waitStatus(t, db, map[string]int{"DONE": 5})
	if got := join(rcv.delivered()["m"]); got != "a,b,c,d,e" {
		t.Fatalf("delivered %s", got)
	}
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/pgtest"
)

// TestOutboxFailover runs an outbox source on two boomerang processes
// sharing one PostgreSQL table: a primary and a standby. The primary is
// killed with SIGKILL while rows flow; the standby takes over and goes
// on, rows keep arriving, and the killed node is started again on its
// data directory to finish the rows its store holds. In the end every
// row is DONE, each row became exactly one Boomerang task (one node, one
// task id, the one the row records), and each group was delivered in
// order.
func TestOutboxFailover(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	dsn := pg.Database(t)
	ctx := testContext(t)
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := &outboxHistory{acks: map[string][]outboxAck{}}
	rcvA, rcvB := startOutboxReceiver(t, h, "node-a"), startOutboxReceiver(t, h, "node-b")
	spec := func(rcv string) string {
		return fmt.Sprintf("name=orders,dsn=%s,client=admin,callback=tcp://%s,poll-interval=50ms,lease-ttl=1s,batch=100", dsn, rcv)
	}
	if out, err := exec.Command(filepath.Join(binDir, "boomerang"), "outbox", "init", "--outbox-source", spec(rcvA)).CombinedOutput(); err != nil {
		t.Fatalf("outbox init: %v\n%s", err, out)
	}
	const groups = 40
	insertRows := func(from, to int) {
		for i := from; i < to; i++ {
			for g := range groups {
				if _, err := db.Exec(ctx, "INSERT INTO boomerang_outbox (group_key, payload) VALUES ($1, $2)",
					fmt.Sprint("g", g), []byte(fmt.Sprintf("g%d/%04d", g, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	insertRows(0, 50)
	dataA := newDataDir(t)
	a := startServer(t, dataA, "--outbox-source", spec(rcvA), "--outbox-node", "node-a")
	awaitHolder(t, db, "node-a")
	startServer(t, "", "--outbox-source", spec(rcvB), "--outbox-node", "node-b")
	pollUntil(t, func() bool { return countStatus(t, db, "DONE") >= 300 }, func() string { return "300 rows DONE" })
	a.kill()
	t.Logf("node-a killed with %d rows QUEUED, %d DONE", countStatus(t, db, "QUEUED"), countStatus(t, db, "DONE"))
	insertRows(50, 75)
	awaitHolder(t, db, "node-b")
	// node-b drains every group but those whose head node-a QUEUED:
	// that row's task is in node-a's store, and the group waits for it.
	pollUntil(t, func() bool {
		return countWhere(t, db, `status <> 'DONE' AND group_key NOT IN
			(SELECT group_key FROM boomerang_outbox WHERE status = 'QUEUED' AND owner = 'node-a')`) == 0
	}, func() string { return "node-b drained the groups node-a does not hold" })
	startServer(t, dataA, "--outbox-source", spec(rcvA), "--outbox-node", "node-a")
	pollUntil(t, func() bool { return countStatus(t, db, "DONE") == groups*75 }, func() string { return "every row DONE" })
	h.check(t, db, groups, 75)
	byB := countWhere(t, db, "owner = 'node-b'")
	t.Logf("rows delivered by node-a: %d, by node-b: %d", groups*75-byB, byB)
	if byB == 0 {
		t.Fatal("node-b delivered nothing")
	}
}

func awaitHolder(t *testing.T, db *pgxpool.Pool, node string) {
	t.Helper()
	pollUntil(t, func() bool {
		var holder string
		err := db.QueryRow(context.Background(), "SELECT holder FROM boomerang_outbox_lease WHERE source = 'orders' AND expires_at > now()").Scan(&holder)
		return err == nil && holder == node
	}, func() string { return node + " holds the lease" })
}

func countStatus(t *testing.T, db *pgxpool.Pool, status string) int {
	return countWhere(t, db, "status = '"+status+"'")
}

func countWhere(t *testing.T, db *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM boomerang_outbox WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// outboxAck is one acknowledged delivery: which node sent it, which task.
type outboxAck struct {
	node string
	task uint64
}

// outboxHistory is every acknowledged delivery, by payload, in order.
type outboxHistory struct {
	mu    sync.Mutex
	acks  map[string][]outboxAck
	order map[string][]string // payloads by group, in the order first acknowledged
}

func startOutboxReceiver(t *testing.T, h *outboxHistory, node string) string {
	t.Helper()
	r, err := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: func(_ context.Context, d *boomerangv1.Delivery) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		p := string(d.Payload)
		if len(h.acks[p]) == 0 {
			if h.order == nil {
				h.order = map[string][]string{}
			}
			h.order[d.Group] = append(h.order[d.Group], p)
		}
		h.acks[p] = append(h.acks[p], outboxAck{node: node, task: d.TaskId})
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_ = r.Close(ctx)
		<-done
	})
	return ln.Addr().String()
}

// check compares the deliveries with the table.
func (h *outboxHistory) check(t *testing.T, db *pgxpool.Pool, groups, perGroup int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	rows, err := db.Query(context.Background(), "SELECT convert_from(payload, 'UTF8'), owner, task_id FROM boomerang_outbox")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var payload, owner string
		var task int64
		if err := rows.Scan(&payload, &owner, &task); err != nil {
			t.Fatal(err)
		}
		n++
		acks := h.acks[payload]
		if len(acks) == 0 {
			t.Errorf("row %s was never delivered", payload)
			continue
		}
		for _, a := range acks {
			if a.node != owner || a.task != uint64(task) {
				t.Errorf("row %s, QUEUED by %s as task %d, was delivered by %s as task %d", payload, owner, task, a.node, a.task)
			}
		}
	}
	if n != groups*perGroup {
		t.Fatalf("%d rows, want %d", n, groups*perGroup)
	}
	for g := range groups {
		got := h.order[fmt.Sprint("g", g)]
		if !sort.StringsAreSorted(got) || len(got) != perGroup {
			t.Errorf("group g%d delivered out of order or incompletely: %s", g, strings.Join(got, " "))
		}
	}
}

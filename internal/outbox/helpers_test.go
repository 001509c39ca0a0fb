package outbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/pgtest"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/server"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// waitLimit bounds every wait in these tests; reaching it is a failure.
const waitLimit = 60 * time.Second

// pg is the PostgreSQL server of the package's tests; each test makes
// its own database on it.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	s, err := pgtest.New(pgtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pg = s
	code := m.Run()
	s.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// db is a test's database, initialised for cfg, and a pool on it.
func newDB(t *testing.T, cfg *Config) *pgxpool.Pool {
	t.Helper()
	cfg.DSN = pg.Database(t)
	if err := Init(context.Background(), *cfg); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), cfg.DSN+"&pool_max_conns=200")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func exec(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	tag, err := db.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

// insert adds a row to the default table.
func insert(t *testing.T, db *pgxpool.Pool, group, payload string) {
	t.Helper()
	exec(t, db, "INSERT INTO boomerang_outbox (group_key, payload) VALUES ($1, $2)", group, []byte(payload))
}

// statuses counts the rows by status.
func statuses(t *testing.T, db *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT status, count(*) FROM boomerang_outbox GROUP BY status")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

// eventually polls cond until it holds, failing the test at waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// receiver is a raw TCP receiver that records what it is given. fail,
// when set, makes it refuse a delivery.
type receiver struct {
	addr string

	mu       sync.Mutex
	got      []*boomerangv1.Delivery // every attempt
	acked    []*boomerangv1.Delivery // the attempts answered with success
	inFlight map[string]int          // by group
	overlap  []string                // groups that had two deliveries at once
	fail     func(d *boomerangv1.Delivery) bool
	held     map[string]chan struct{} // payloads whose delivery waits until the channel closes
}

func startReceiver(t testing.TB) *receiver {
	t.Helper()
	rcv := &receiver{inFlight: map[string]int{}, held: map[string]chan struct{}{}}
	r, err := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: rcv.handle})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv.addr = ln.Addr().String()
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
	return rcv
}

func (r *receiver) callback() *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: r.addr}
}

func (r *receiver) handle(_ context.Context, d *boomerangv1.Delivery) error {
	r.mu.Lock()
	if d.Group != "" {
		if r.inFlight[d.Group] > 0 {
			r.overlap = append(r.overlap, d.Group)
		}
		r.inFlight[d.Group]++
	}
	fail := r.fail != nil && r.fail(d)
	hold := r.held[string(d.Payload)]
	r.got = append(r.got, d)
	if !fail {
		r.acked = append(r.acked, d)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if d.Group != "" {
			r.inFlight[d.Group]--
		}
		r.mu.Unlock()
	}()
	if hold != nil {
		<-hold
	}
	if fail {
		return fmt.Errorf("refused %q", d.Payload)
	}
	return nil
}

// hold makes the delivery of a payload wait until the returned function
// is called (at the latest when the test ends).
func (r *receiver) hold(t testing.TB, payload string) (let func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	r.held[payload] = ch
	r.mu.Unlock()
	let = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(let)
	return let
}

func (r *receiver) setFail(f func(d *boomerangv1.Delivery) bool) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

// delivered is the payloads acknowledged so far, by group, in order.
func (r *receiver) delivered() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, d := range r.acked {
		out[d.Group] = append(out[d.Group], string(d.Payload))
	}
	return out
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) overlaps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.overlap...)
}

// node is one Boomerang server with the outbox running in it.
type node struct {
	srv *server.Server
	ob  *Outbox
	src *Source
}

// newDataDir is a data directory for a server to create: the server
// refuses one others may read, as t.TempDir's are.
func newDataDir(t testing.TB) string { return filepath.Join(t.TempDir(), "data") }

// nodeOptions tune startNode.
type nodeOptions struct {
	name    string                 // default "node-a"
	dataDir string                 // default: a new temporary directory
	retry   scheduler.RetryDecider // default: two attempts 10 ms apart
	before  func(*server.Server)   // runs once the server is up, before the outbox starts
	elector func(string) Elector   // default: the lease row
	wrap    func(Scheduler) Scheduler
}

// startNode runs a server and the outbox with cfg in it, stopped when the
// test ends (or by stop).
func startNode(t testing.TB, cfg Config, o nodeOptions) *node {
	t.Helper()
	if o.name == "" {
		o.name = "node-a"
	}
	if o.dataDir == "" {
		o.dataDir = newDataDir(t)
	}
	if o.retry == nil {
		o.retry = scheduler.FixedRetry{Attempts: 2, Delay: 10 * time.Millisecond}
	}
	ob, err := New([]Config{cfg}, Options{Node: o.name, Elector: o.elector})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		DataDir: o.dataDir, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdminPassword: "admin-password",
		Retry: o.retry, OnFinished: ob.Finished, Partitions: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o.before != nil {
		o.before(srv)
	}
	var sched Scheduler = srv.Scheduler()
	if o.wrap != nil {
		sched = o.wrap(sched)
	}
	if err := ob.Start(context.Background(), sched, srv.Registerer()); err != nil {
		t.Fatal(err)
	}
	n := &node{srv: srv, ob: ob, src: ob.Source(cfg.Name)}
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_ = n.srv.Stop(ctx)
	_ = n.ob.Stop(ctx)
}

// sourceConfig is a source on the default table delivering to rcv as
// the admin client, with quick polls.
func sourceConfig(rcv *receiver) Config {
	return Config{
		Name:         "orders",
		Target:       Target{Client: "admin", Callback: rcv.callback()},
		PollInterval: 50 * time.Millisecond,
		LeaseTTL:     time.Second,
	}
}

func waitStatus(t *testing.T, db *pgxpool.Pool, want map[string]int) {
	t.Helper()
	eventually(t, fmt.Sprintf("rows %v", want), func() bool {
		got := statuses(t, db)
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	})
}

func payloads(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

func join(s []string) string { return strings.Join(s, ",") }

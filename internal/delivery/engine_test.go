package delivery

import (
	"context"
	"errors"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestClientCacheAndInvalidate(t *testing.T) {
	e, clients := newEngine(t, tcpCallback("first.example:1"), nil)
	m := newManualTransport()
	e.byProto[storepb.Protocol_PROTOCOL_TCP] = m
	run := func(want string) {
		t.Helper()
		o := deliver(e, task("x"), 1)
		a := m.take(t)
		a.finish(nil)
		if err := o.wait(t); err != nil {
			t.Fatal(err)
		}
		if a.route.endpoint != want {
			t.Fatalf("delivered to %s, want %s", a.route.endpoint, want)
		}
	}
	for range 5 {
		run("first.example:1")
	}
	if clients.reads != 1 {
		t.Fatalf("%d client reads for 5 deliveries, want 1", clients.reads)
	}
	clients.put(&storepb.Client{Id: "acme", Callback: tcpCallback("second.example:1")})
	run("first.example:1") // cached until invalidated
	e.Invalidate("acme")
	run("second.example:1")
	if clients.reads != 2 {
		t.Fatalf("%d client reads, want 2", clients.reads)
	}
	// A deregistered client's tasks fail for good.
	clients.mu.Lock()
	delete(clients.clients, "acme")
	clients.mu.Unlock()
	e.Invalidate("acme")
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrUnknownClient) {
		t.Fatalf("outcome %v, want unknown client", err)
	}
	if _, retry := e.Next(tk, 1, err); retry {
		t.Fatal("an unknown client's task is retried")
	}
}

// failingClients fails every read.
type failingClients struct{}

func (failingClients) Client(string) (*storepb.Client, error) { return nil, errors.New("disk on fire") }

// A client that cannot be read now (a failing store, a cluster node whose
// copy of the clients is catching up) is no attempt: the scheduler tries
// again without counting one.
func TestClientReadErrorIsRetried(t *testing.T) {
	e, err := New(Config{Clients: failingClients{}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	tk := task("x")
	err = deliver(e, tk, 1).wait(t)
	if err == nil || IsPermanent(err) || !errors.Is(err, scheduler.ErrNotAttempted) {
		t.Fatalf("outcome %v, want an attempt not made", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a failed client read is not retried")
	}
}

func TestCloseFailsQueuedAndWaitsForUnderWay(t *testing.T) {
	e, m := manualEngine(t, func(c *Config) {
		c.Pools = map[string]PoolConfig{DefaultPool: {MaxConcurrent: 1}}
	})
	running := deliver(e, task("running"), 1)
	queued := deliver(e, task("queued"), 1)
	a := m.take(t)
	closed := make(chan error, 1)
	go func() { closed <- e.Close(context.Background()) }()
	if err := queued.wait(t); !errors.Is(err, ErrClosed) {
		t.Fatalf("queued attempt: %v, want ErrClosed", err)
	}
	running.pending(t)
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with an attempt under way", err)
	default:
	}
	a.finish(nil)
	if err := running.wait(t); err != nil {
		t.Fatalf("the attempt under way: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	// After Close, attempts fail at once.
	if err := deliver(e, task("late"), 1).wait(t); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if !errors.Is(ErrClosed, scheduler.ErrNotAttempted) {
		t.Fatal("ErrClosed is not a local refusal: the scheduler would count it as an attempt")
	}
}

// stuckReceiver serves a TCP receiver whose handler blocks until its
// context ends or the test is over. (A receiver's Close waits for its
// handlers; it cannot tell that the server has hung up.)
func stuckReceiver(t *testing.T) *countingListener {
	over := make(chan struct{})
	ln := tcpReceiver(t, func(ctx context.Context, _ *boomerangv1.Delivery) error {
		select {
		case <-ctx.Done():
		case <-over:
		}
		return nil
	})
	t.Cleanup(func() { close(over) }) // runs before the receiver's Close
	return ln
}

func TestCloseCutsShortAfterItsContext(t *testing.T) {
	ln := stuckReceiver(t)
	e, err := New(Config{Clients: newClientMap(&storepb.Client{Id: "acme", Callback: tcpCallback(ln.Addr().String())})})
	if err != nil {
		t.Fatal(err)
	}
	o := deliver(e, task("x"), 1)
	eventually(t, "the attempt to start", func() bool { return e.Stats().Pools[DefaultPool].InUse == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want the deadline", err)
	}
	if err := o.wait(t); !errors.Is(err, ErrClosed) {
		t.Fatalf("the attempt under way: %v, want ErrClosed", err)
	}
}

func TestJanitorClosesIdleConnections(t *testing.T) {
	ln := tcpReceiver(t, func(context.Context, *boomerangv1.Delivery) error { return nil })
	e, _ := newEngine(t, tcpCallback(ln.Addr().String()), func(c *Config) {
		c.IdleTimeout = 50 * time.Millisecond
		c.TCPConns = 1
	})
	if err := deliver(e, task("x"), 1).wait(t); err != nil {
		t.Fatal(err)
	}
	tr := e.transport(storepb.Protocol_PROTOCOL_TCP).(*tcpTransport)
	eventually(t, "the idle connection to be closed", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.endpoints) == 0
	})
	// A later delivery dials again.
	if err := deliver(e, task("y"), 1).wait(t); err != nil {
		t.Fatal(err)
	}
	if n := ln.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: one closed when idle, one for the later delivery", n)
	}
}

func TestDeliverNeverBlocksTheCaller(t *testing.T) {
	// Deliver from a goroutine standing in for a scheduler loop, with a
	// receiver that never answers: every call returns at once.
	ln := stuckReceiver(t)
	cb := tcpCallback(ln.Addr().String())
	cb.TimeoutMs = 100
	e, _ := newEngine(t, cb, func(c *Config) { c.Pools = map[string]PoolConfig{DefaultPool: {MaxConcurrent: 2, MaxQueued: 10}} })
	var outs []outcome
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for range 100 {
			outs = append(outs, deliver(e, task("x"), 1))
		}
	}()
	select {
	case <-returned:
	case <-time.After(waitLimit):
		t.Fatal("Deliver blocked")
	}
	full := 0
	for _, o := range outs {
		if errors.Is(o.wait(t), ErrPoolFull) {
			full++
		}
	}
	if full == 0 {
		t.Fatal("no attempt was refused by the full pool")
	}
	var _ scheduler.Deliverer = e
}

package oms

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protodelim"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait in these tests: a stalled server fails the
// test instead of hanging it.
const waitLimit = 20 * time.Second

// start runs a server on a free loopback port and stops it at cleanup.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

// client is a test client speaking the protocol on one connection.
type client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, srv *Server) *client {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *client) send(orders ...*omsv1.Order) {
	c.t.Helper()
	var buf []byte
	for _, o := range orders {
		b, err := protodelimBytes(o)
		if err != nil {
			c.t.Fatal(err)
		}
		buf = append(buf, b...)
	}
	c.sendRaw(buf)
}

func (c *client) sendRaw(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads one response, failing the test after waitLimit.
func (c *client) recv() *omsv1.Response {
	c.t.Helper()
	r, err := c.tryRecv()
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return r
}

func (c *client) tryRecv() (*omsv1.Response, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		return nil, err
	}
	r := new(omsv1.Response)
	return r, protodelim.UnmarshalFrom(c.br, r)
}

func (c *client) recvN(n int) []*omsv1.Response {
	c.t.Helper()
	out := make([]*omsv1.Response, n)
	for i := range out {
		out[i] = c.recv()
	}
	return out
}

// recvUntilEOF reads responses until the server closes the connection.
func (c *client) recvUntilEOF() []*omsv1.Response {
	c.t.Helper()
	var out []*omsv1.Response
	for {
		r, err := c.tryRecv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			c.t.Fatalf("recv after %d responses: %v", len(out), err)
		}
		out = append(out, r)
	}
}

func protodelimBytes(m *omsv1.Order) ([]byte, error) {
	var buf writerBuf
	_, err := protodelim.MarshalTo(&buf, m)
	return buf, err
}

type writerBuf []byte

func (w *writerBuf) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}

// valid returns an order that passes every default check.
func valid(corr int64, seq uint64) *omsv1.Order {
	return &omsv1.Order{
		CorrelationId: corr, SeqInFamily: seq, ClientOrderId: uint64(corr)<<20 | seq,
		Symbol: "ACME", Side: omsv1.Side_SIDE_BUY, Quantity: 10, Price: 10_000, ClientTsNs: 42,
	}
}

// waitFor checks cond every millisecond until it holds, failing after
// waitLimit. Used only for state with no event to wait on (counters).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	timeout := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// logicalClock is a Clock whose Now strictly increases on every call,
// across goroutines, so timestamps order events: if an account's next
// order is dispatched before the previous one is done, its dispatched
// time is below the previous done time. With hold set, execution timers
// wait for fire; otherwise they run on real timers.
type logicalClock struct {
	n    atomic.Int64
	hold bool

	mu      sync.Mutex
	pending []func()
	changed chan struct{}
}

func newLogicalClock(hold bool) *logicalClock {
	return &logicalClock{hold: hold, changed: make(chan struct{}, 1)}
}

func (c *logicalClock) Now() time.Time { return time.Unix(1_000_000, c.n.Add(1)) }

func (c *logicalClock) AfterFunc(d time.Duration, f func()) {
	if !c.hold {
		time.AfterFunc(d, f)
		return
	}
	c.mu.Lock()
	c.pending = append(c.pending, f)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// waitPending waits until n timers are held.
func (c *logicalClock) waitPending(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		c.mu.Lock()
		got := len(c.pending)
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-c.changed:
		case <-timeout:
			t.Fatalf("timed out waiting for %d held executions, have %d", n, got)
		}
	}
}

// fire runs every held timer.
func (c *logicalClock) fire() int {
	c.mu.Lock()
	fs := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

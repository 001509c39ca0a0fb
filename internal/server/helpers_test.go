package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	waitLimit     = 20 * time.Second
	adminPassword = "admin-password"
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// lightHash keeps logins cheap under -race.
var lightHash = auth.HashParams{Time: 1, MemoryKiB: 64, Threads: 1}

// testServer is a Server on a temp dir, loopback port 0 listeners, a fake
// clock and a deliverer the test controls.
type testServer struct {
	*Server
	dir   string
	clock *clockwork.FakeClock
	del   *recorder
	tune  func(*Config)
}

func startServer(t testing.TB, tune func(*Config)) *testServer {
	t.Helper()
	ts := &testServer{dir: filepath.Join(t.TempDir(), "data"), clock: clockwork.NewFakeClockAt(epoch), del: newRecorder(), tune: tune}
	ts.start(t)
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func (ts *testServer) start(t testing.TB) {
	t.Helper()
	cfg := Config{
		DataDir: ts.dir, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		AdminPassword: adminPassword, PasswordHash: lightHash, Partitions: 2,
		Clock: ts.clock, Deliverer: ts.del,
	}
	if ts.tune != nil {
		ts.tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ts.Server = s
}

func (ts *testServer) stop(t testing.TB) {
	t.Helper()
	if ts.Server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// Stop waits for the delivery attempts under way: fail the ones the
	// test left hanging.
	stopped := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case a := <-ts.del.attempts:
				a.done(errRefused)
			case <-stopped:
				return
			}
		}
	}()
	if err := ts.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	close(stopped)
	<-drained
	ts.Server = nil
}

func (ts *testServer) restart(t testing.TB) {
	t.Helper()
	ts.stop(t)
	ts.start(t)
}

// eventually advances the fake clock a millisecond at a time until cond
// holds, so tasks come due and the scheduler acts on them.
func (ts *testServer) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		ts.clock.Advance(time.Millisecond)
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// poll waits until cond holds, checking every millisecond, for at most
// waitLimit.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
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

var (
	admin = auth.Principal{Client: "admin", Role: auth.RoleAdmin}
	alice = auth.Principal{Client: "alice", Role: auth.RoleClient}
	bob   = auth.Principal{Client: "bob", Role: auth.RoleClient}
)

var httpCallback = &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: "http://127.0.0.1:9/hook"}

// addClient registers a client through the service, as the admin.
func (ts *testServer) addClient(t testing.TB, req *boomerangv1.RegisterClientRequest) {
	t.Helper()
	if req.Password == "" {
		req.Password = req.ClientId + "-password"
	}
	if _, err := ts.svc.RegisterClient(context.Background(), admin, req); err != nil {
		t.Fatalf("RegisterClient(%s): %v", req.ClientId, err)
	}
}

func (ts *testServer) addClients(t testing.TB) {
	t.Helper()
	ts.addClient(t, &boomerangv1.RegisterClientRequest{ClientId: "alice", Callback: httpCallback})
	ts.addClient(t, &boomerangv1.RegisterClientRequest{ClientId: "bob", Callback: httpCallback})
}

func (ts *testServer) register(t *testing.T, p auth.Principal, req *boomerangv1.RegisterTaskRequest) *boomerangv1.Task {
	t.Helper()
	resp, err := ts.svc.RegisterTask(context.Background(), p, req)
	if err != nil {
		t.Fatalf("RegisterTask: %v", err)
	}
	return resp.Task
}

// wantError checks an error's wire status and field.
func wantError(t *testing.T, err error, status boomerangv1.Status, field string) {
	t.Helper()
	e := ErrorOf(err)
	if e.Status != status || e.Field != field {
		t.Fatalf("error %v → %v field %q (%q), want %v field %q", err, e.Status, e.Field, e.Message, status, field)
	}
}

// recorder is a Deliverer that hands attempts to the test, or settles
// them at once with outcome when it is set.
type recorder struct {
	attempts chan attempt
	mu       sync.Mutex
	outcome  func(scheduler.Delivery) (error, bool)
}

type attempt struct {
	scheduler.Delivery
	done func(error)
}

func newRecorder() *recorder { return &recorder{attempts: make(chan attempt, 1<<12)} }

func (r *recorder) Deliver(d scheduler.Delivery, done func(error)) {
	r.mu.Lock()
	outcome := r.outcome
	r.mu.Unlock()
	if outcome != nil {
		if err, ok := outcome(d); ok {
			done(err)
			return
		}
	}
	r.attempts <- attempt{Delivery: d, done: done}
}

func (r *recorder) setOutcome(f func(scheduler.Delivery) (error, bool)) {
	r.mu.Lock()
	r.outcome = f
	r.mu.Unlock()
}

var errRefused = errors.New("receiver refused")

// tcpClient speaks raw frames.
type tcpClient struct {
	t       *testing.T
	nc      net.Conn
	br      *bufio.Reader
	nextID  uint64
	session string
}

func dialTCP(t *testing.T, addr string) *tcpClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &tcpClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes a request, giving it the next id and the session unless
// set, and returns its id.
func (c *tcpClient) send(req *boomerangv1.Request) uint64 {
	c.t.Helper()
	if req.RequestId == 0 {
		c.nextID++
		req.RequestId = c.nextID
	}
	if req.SessionId == "" {
		req.SessionId = c.session
	}
	if _, err := protodelim.MarshalTo(c.nc, req); err != nil {
		c.t.Fatalf("send: %v", err)
	}
	return req.RequestId
}

func (c *tcpClient) recv() *boomerangv1.Response {
	c.t.Helper()
	resp, err := c.tryRecv()
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return resp
}

func (c *tcpClient) tryRecv() (*boomerangv1.Response, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	resp := new(boomerangv1.Response)
	err := protodelim.UnmarshalFrom(c.br, resp)
	return resp, err
}

// call sends a request and reads its response, which must come next.
func (c *tcpClient) call(req *boomerangv1.Request) *boomerangv1.Response {
	c.t.Helper()
	id := c.send(req)
	resp := c.recv()
	if resp.RequestId != id {
		c.t.Fatalf("response to %d, want %d: %v", resp.RequestId, id, resp)
	}
	return resp
}

func (c *tcpClient) login(id, password string) *boomerangv1.LoginResponse {
	c.t.Helper()
	resp := c.call(&boomerangv1.Request{Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: id, Password: password}}})
	if resp.Error != nil {
		c.t.Fatalf("login %s: %v", id, resp.Error)
	}
	c.session = resp.GetLogin().SessionId
	return resp.GetLogin()
}

// closed expects the connection error frame, then the end of the stream.
func (c *tcpClient) closed(status boomerangv1.Status) *boomerangv1.Error {
	c.t.Helper()
	resp := c.recv()
	if resp.RequestId != 0 || resp.Error.GetStatus() != status {
		c.t.Fatalf("got %v, want a connection error frame with %v", resp, status)
	}
	if _, err := c.tryRecv(); !errors.Is(err, io.EOF) {
		c.t.Fatalf("after the error frame: %v, want EOF", err)
	}
	return resp.Error
}

func okResponse(t *testing.T, resp *boomerangv1.Response) *boomerangv1.Response {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("request %d failed: %v", resp.RequestId, resp.Error)
	}
	return resp
}

package boomload

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	benchConns = flag.Int("boomload.conns", DefaultConns, "BenchmarkRegister's connections")
	benchDepth = flag.Int("boomload.depth", DefaultDepth, "BenchmarkRegister's requests in flight per connection")
	benchBatch = flag.Int("boomload.batch", 1, "BenchmarkRegister's tasks per request")
)

const adminPassword = "load-admin-password"

// startServer runs a real server in-process on free ports and registers
// the client "load".
func startServer(tb testing.TB) string {
	tb.Helper()
	srv, err := server.New(server.Config{
		DataDir: filepath.Join(tb.TempDir(), "data"), TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdminPassword: adminPassword,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			tb.Errorf("Stop: %v", err)
		}
	})
	admin, err := client.Dial(ctx, srv.TCPAddr(), client.Credentials{ClientID: "admin", Password: adminPassword})
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	_, err = admin.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{
		ClientId: "load", Password: "load-password",
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_UDP, Endpoint: "127.0.0.1:9"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return srv.TCPAddr()
}

var loadCreds = client.Credentials{ClientID: "load", Password: "load-password"}

func TestCountRun(t *testing.T) {
	addr := startServer(t)
	rep, err := Run(t.Context(), Config{Addr: addr, Credentials: loadCreds, Count: 2000, Conns: 2, Depth: 32, Warmup: 100})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Acked != 2000 || rep.ErrorCount() != 0 || rep.ThroughputPerS <= 0 || rep.P50us <= 0 || rep.P99us < rep.P50us || rep.MaxUs < rep.P999us {
		t.Fatalf("report %+v", rep)
	}
	// Every registration is on the server: warmup and measured ones.
	c, err := client.Dial(t.Context(), addr, loadCreds)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	for task, err := range c.Tasks(t.Context(), &boomerangv1.ListTasksRequest{PageSize: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(task.GetGroup(), "bench-") || len(task.GetPayload()) != DefaultPayloadSize {
			t.Fatalf("task %v", task)
		}
		n++
	}
	if n != 2100 {
		t.Fatalf("%d tasks on the server, want 2100", n)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "registrations/s") {
		t.Fatalf("WriteText: %q, %v", text.String(), err)
	}
}

// A duration run stops by itself; an error (here: a payload over the
// server's limit) is counted by status, not fatal.
func TestDurationRunCountsErrors(t *testing.T) {
	addr := startServer(t)
	rep, err := Run(t.Context(), Config{Addr: addr, Credentials: loadCreds, Duration: 200 * time.Millisecond, Conns: 1, Depth: 4, PayloadSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Acked != 0 || rep.Errors["STATUS_INVALID_REQUEST"] == 0 || rep.FirstError == "" {
		t.Fatalf("report %+v", rep)
	}
}

// A batch run registers every task in RegisterTasks requests, the last
// one cut to the count; a task the server refuses fails alone.
func TestBatchRun(t *testing.T) {
	addr := startServer(t)
	rep, err := Run(t.Context(), Config{Addr: addr, Credentials: loadCreds, Count: 2050, Batch: 100, Conns: 2, Depth: 4, Warmup: 30, Groups: 7})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Acked != 2050 || rep.ErrorCount() != 0 || rep.Batch != 100 || rep.P50us <= 0 {
		t.Fatalf("report %+v", rep)
	}
	c, err := client.Dial(t.Context(), addr, loadCreds)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	groups := map[string]int{}
	for task, err := range c.Tasks(t.Context(), &boomerangv1.ListTasksRequest{PageSize: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		groups[task.GetGroup()]++
	}
	// The warmup, rounded up to a whole batch, is on the server too.
	total, least, most := 0, 2150, 0
	for _, n := range groups {
		total, least, most = total+n, min(least, n), max(most, n)
	}
	if len(groups) != 7 || total != 2150 || most-least > 1 {
		t.Fatalf("tasks by group %v, want 2150 over 7 groups round robin", groups)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "batches of 100") {
		t.Fatalf("WriteText: %q, %v", text.String(), err)
	}
	// Payloads over the server's limit: every task fails, counted by status.
	rep, err = Run(t.Context(), Config{Addr: addr, Credentials: loadCreds, Count: 20, Batch: 10, Conns: 1, Depth: 1, PayloadSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Acked != 0 || rep.Errors["STATUS_INVALID_REQUEST"] != 20 {
		t.Fatalf("report %+v", rep)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Addr: "127.0.0.1:1"},
		{Addr: "127.0.0.1:1", Credentials: loadCreds, Count: 5, Duration: time.Second},
		{Addr: "127.0.0.1:1", Credentials: loadCreds, Conns: -1},
		{Addr: "127.0.0.1:1", Credentials: loadCreds, Batch: 1001},
	} {
		if _, err := Run(t.Context(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	if _, err := Run(t.Context(), Config{Addr: "127.0.0.1:1", Credentials: loadCreds, Count: 1}); err == nil {
		t.Error("Run against a closed port succeeded")
	}
}

// BenchmarkRegister measures durable registrations through the SDK
// against an in-process server (the tasks are due a day later, so nothing
// is delivered), client and server sharing the machine. The echo baseline
// runs the same load against a server that answers every registration at
// once from its reader, without storage or scheduling: the cost of the
// SDK, the protocol and loopback alone.
//
//	go test -run '^$' -bench Register -benchtime 200000x ./internal/boomload
func BenchmarkRegister(b *testing.B) {
	b.Run("echo", func(b *testing.B) { benchRegister(b, startEcho(b)) })
	b.Run("server", func(b *testing.B) { benchRegister(b, startServer(b)) })
}

func benchRegister(b *testing.B, addr string) {
	b.ResetTimer()
	rep, err := Run(b.Context(), Config{Addr: addr, Credentials: loadCreds, Count: b.N, Conns: *benchConns, Depth: *benchDepth, Batch: *benchBatch})
	if err != nil {
		b.Fatal(err)
	}
	if rep.ErrorCount() != 0 {
		b.Fatalf("errors: %v (%s)", rep.Errors, rep.FirstError)
	}
	b.ReportMetric(rep.ThroughputPerS, "regs/s")
	b.ReportMetric(rep.P50us, "p50-µs")
	b.ReportMetric(rep.P99us, "p99-µs")
	b.ReportMetric(rep.P999us, "p99.9-µs")
}

// startEcho serves the raw TCP protocol with one goroutine per connection
// that answers each request as it reads it (login, server info and task
// registration; the task echoes the request), flushing whenever it has
// read everything that arrived.
func startEcho(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { echo(nc) })
		}
	})
	b.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

func echo(nc net.Conn) {
	defer nc.Close()
	br, bw := bufio.NewReaderSize(nc, 64<<10), bufio.NewWriterSize(nc, 64<<10)
	var req boomerangv1.Request
	var id uint64
	for {
		if err := protodelim.UnmarshalFrom(br, &req); err != nil {
			bw.Flush()
			return
		}
		resp := &boomerangv1.Response{RequestId: req.GetRequestId()}
		switch b := req.GetBody().(type) {
		case *boomerangv1.Request_Login:
			resp.Body = &boomerangv1.Response_Login{Login: &boomerangv1.LoginResponse{SessionId: "s", ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()}}
		case *boomerangv1.Request_GetServerInfo:
			resp.Body = &boomerangv1.Response_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoResponse{MaxFrameBytes: 1 << 20}}
		case *boomerangv1.Request_RegisterTask:
			id++
			r := b.RegisterTask
			resp.Body = &boomerangv1.Response_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskResponse{Created: true, Task: &boomerangv1.Task{
				Id: id, Client: "load", Group: r.GetGroup(), Payload: r.GetPayload(), FireAtMs: time.Now().UnixMilli() + r.GetDelayMs(),
				Status: boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED, CreatedMs: time.Now().UnixMilli(),
			}}}
		default:
			resp.Error = &boomerangv1.Error{Status: boomerangv1.Status_STATUS_INTERNAL, Message: "echo: not implemented"}
		}
		if _, err := protodelim.MarshalTo(bw, resp); err != nil {
			return
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// A server that stops answering mid-run (hung, or gone without closing
// its sockets) cannot hold a duration run open: registrations still under
// way are given up Grace after the run ends.
func TestDurationRunEndsWhenServerStopsAnswering(t *testing.T) {
	addr := startServer(t)
	p := newFreezingProxy(t, addr, 4<<10)
	done := make(chan error, 1)
	var rep *Report
	go func() {
		var err error
		rep, err = Run(t.Context(), Config{Addr: p.addr(), Credentials: loadCreds, Duration: 2 * time.Second, Grace: 100 * time.Millisecond, Conns: 1, Depth: 8})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after the server stopped answering")
	}
	if !p.frozen.Load() || rep.Errors["canceled"] == 0 {
		t.Fatalf("the proxy froze: %v; report %+v", p.frozen.Load(), rep)
	}
}

// freezingProxy forwards to a server until it has passed limit bytes of
// answers, then forwards nothing more and keeps the connections open: a
// server that hangs.
type freezingProxy struct {
	ln     net.Listener
	frozen atomic.Bool
}

func newFreezingProxy(t *testing.T, target string, limit int64) *freezingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		conns.Wait()
	})
	conns.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			t.Cleanup(func() { c.Close(); up.Close() })
			conns.Go(func() { _, _ = io.Copy(up, c) })
			conns.Go(func() {
				_, _ = io.CopyN(c, up, limit)
				p.frozen.Store(true) // from now on nothing comes back
			})
		}
	})
	return p
}

func (p *freezingProxy) addr() string { return p.ln.Addr().String() }

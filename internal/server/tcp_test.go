package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
)

func loginReq(id, pw string) *boomerangv1.Request {
	return &boomerangv1.Request{Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: id, Password: pw}}}
}

func registerReq(r *boomerangv1.RegisterTaskRequest) *boomerangv1.Request {
	return &boomerangv1.Request{Body: &boomerangv1.Request_RegisterTask{RegisterTask: r}}
}

func getReq(id uint64) *boomerangv1.Request {
	return &boomerangv1.Request{Body: &boomerangv1.Request_GetTask{GetTask: &boomerangv1.GetTaskRequest{Id: id}}}
}

func infoReq() *boomerangv1.Request {
	return &boomerangv1.Request{Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoRequest{}}}
}

func TestTCPTaskLifecycle(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	c := dialTCP(t, ts.TCPAddr())
	if l := c.login("admin", adminPassword); !l.Admin || l.ExpiresAtMs != epoch.Add(time.Hour).UnixMilli() {
		t.Fatalf("admin login %v", l)
	}
	reg := okResponse(t, c.call(&boomerangv1.Request{Body: &boomerangv1.Request_RegisterClient{RegisterClient: &boomerangv1.RegisterClientRequest{
		ClientId: "alice", Password: "alice-password", Callback: httpCallback,
		DefaultMode: boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
	}}})).GetRegisterClient()
	if len(reg.SigningSecret) != 32 || reg.Client.Id != "alice" || reg.Client.DefaultMode != boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR {
		t.Fatalf("RegisterClient: %v", reg)
	}

	a := dialTCP(t, ts.TCPAddr())
	a.login("alice", "alice-password")
	task := okResponse(t, a.call(registerReq(&boomerangv1.RegisterTaskRequest{
		Payload: []byte("hello"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 60_000}, Group: "g1",
	}))).GetRegisterTask()
	if !task.Created || task.Task.Client != "alice" || task.Task.FireAtMs != epoch.Add(time.Minute).UnixMilli() ||
		task.Task.Mode != boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR || task.Task.Status != boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED {
		t.Fatalf("RegisterTask: %v", task)
	}
	id := task.Task.Id
	if got := okResponse(t, a.call(getReq(id))).GetGetTask().Task; string(got.Payload) != "hello" || got.Group != "g1" {
		t.Fatalf("GetTask: %v", got)
	}
	upd := okResponse(t, a.call(&boomerangv1.Request{Body: &boomerangv1.Request_UpdateTask{UpdateTask: &boomerangv1.UpdateTaskRequest{
		Id: id, Payload: []byte("bye"), When: &boomerangv1.UpdateTaskRequest_FireAtMs{FireAtMs: epoch.Add(time.Hour).UnixMilli()},
	}}})).GetUpdateTask().Task
	if string(upd.Payload) != "bye" || upd.FireAtMs != epoch.Add(time.Hour).UnixMilli() {
		t.Fatalf("UpdateTask: %v", upd)
	}
	list := okResponse(t, a.call(&boomerangv1.Request{Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{}}})).GetListTasks()
	if len(list.Tasks) != 1 || list.Tasks[0].Id != id || list.NextPageToken != 0 {
		t.Fatalf("ListTasks: %v", list)
	}
	okResponse(t, a.call(&boomerangv1.Request{Body: &boomerangv1.Request_CancelTask{CancelTask: &boomerangv1.CancelTaskRequest{Id: id}}}))
	gone := a.call(getReq(id))
	if gone.Error.GetStatus() != boomerangv1.Status_STATUS_NOT_FOUND || gone.Body != nil || !strings.Contains(gone.Error.Message, "not found") {
		t.Fatalf("GetTask after cancel: %v", gone)
	}
	info := okResponse(t, a.call(infoReq())).GetGetServerInfo()
	if info.TcpAddress != ts.TCPAddr() || info.HttpAddress != ts.HTTPAddr() || info.MaxPayloadBytes != DefaultMaxPayloadBytes ||
		info.MaxFrameBytes != DefaultMaxPayloadBytes+DefaultFrameOverhead || info.Partitions != 2 || info.Version != DefaultVersion {
		t.Fatalf("GetServerInfo: %v", info)
	}
}

// TestTCPPipelining sends many requests before reading any response and
// checks that each is answered exactly once.
func TestTCPPipelining(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.MaxInFlight = 16 })
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")
	const n = 300
	sent := map[uint64]bool{}
	go func() {
		// Written from another goroutine: the server stops reading while
		// 16 requests are outstanding, so the writes can block until the
		// responses are read below.
		var buf bytes.Buffer
		for i := range n {
			req := infoReq()
			if i%3 == 0 {
				req = registerReq(&boomerangv1.RegisterTaskRequest{Payload: []byte{byte(i)}, When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 3_600_000}})
			}
			req.RequestId, req.SessionId = uint64(i+1), c.session
			_, _ = protodelim.MarshalTo(&buf, req)
		}
		_, _ = c.nc.Write(buf.Bytes())
	}()
	for i := range n {
		sent[uint64(i+1)] = true
	}
	for range n {
		resp := okResponse(t, c.recv())
		if !sent[resp.RequestId] {
			t.Fatalf("unexpected or duplicate response %d", resp.RequestId)
		}
		delete(sent, resp.RequestId)
		if (resp.RequestId-1)%3 == 0 && resp.GetRegisterTask() == nil || (resp.RequestId-1)%3 != 0 && resp.GetGetServerInfo() == nil {
			t.Fatalf("response %d has the wrong body: %v", resp.RequestId, resp)
		}
	}
}

func TestTCPRequestErrorsKeepConnection(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())

	// No session.
	resp := c.call(getReq(1))
	if resp.Error.GetStatus() != boomerangv1.Status_STATUS_UNAUTHORIZED || !strings.Contains(resp.Error.Message, "log in") {
		t.Fatalf("without a session: %v", resp)
	}
	// Unknown session.
	if resp := c.call(&boomerangv1.Request{SessionId: "forged", Body: infoReq().Body}); resp.Error.GetStatus() != boomerangv1.Status_STATUS_UNAUTHORIZED {
		t.Fatalf("forged session: %v", resp)
	}
	// No body.
	resp = c.call(&boomerangv1.Request{})
	if resp.Error.GetStatus() != boomerangv1.Status_STATUS_INVALID_REQUEST || resp.Error.Field != "body" {
		t.Fatalf("no body: %v", resp)
	}
	// A body this server does not know (field 99) decodes as none.
	unknown := protowire.AppendTag(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 77), 99, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, nil)
	writeFrame(t, c, unknown)
	if resp := c.recv(); resp.RequestId != 77 || resp.Error.GetField() != "body" {
		t.Fatalf("unknown body: %v", resp)
	}
	// A nested message that does not decode (invalid UTF-8 in a string)
	// fails only its request.
	bad := protowire.AppendTag(nil, 1, protowire.VarintType)
	bad = protowire.AppendVarint(bad, 78)
	login := protowire.AppendTag(nil, 1, protowire.BytesType)
	login = protowire.AppendBytes(login, []byte{0xff, 0xfe})
	bad = protowire.AppendTag(bad, 10, protowire.BytesType)
	bad = protowire.AppendBytes(bad, login)
	writeFrame(t, c, bad)
	if resp := c.recv(); resp.RequestId != 78 || resp.Error.GetStatus() != boomerangv1.Status_STATUS_INVALID_REQUEST || resp.Error.Field != "body" {
		t.Fatalf("undecodable body: %v", resp)
	}
	// Wrong password, then throttled.
	if resp := c.call(loginReq("alice", "wrong-password")); resp.Error.GetStatus() != boomerangv1.Status_STATUS_UNAUTHORIZED ||
		resp.Error.Message != "invalid client id or password" {
		t.Fatalf("wrong password: %v", resp)
	}
	if resp := c.call(loginReq("alice", "alice-password")); resp.Error.GetStatus() != boomerangv1.Status_STATUS_UNAUTHORIZED ||
		resp.Error.Message != "too many failed logins; retry in 1s" {
		t.Fatalf("throttled: %v", resp)
	}
	ts.clock.Advance(time.Second)
	// The connection still works.
	c.login("alice", "alice-password")
	okResponse(t, c.call(infoReq()))
}

func TestTCPSessionExpiryAndRefresh(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.SessionTTL = time.Minute })
	c := dialTCP(t, ts.TCPAddr())
	c.login("admin", adminPassword)
	old := c.session
	ts.clock.Advance(30 * time.Second)
	r := okResponse(t, c.call(&boomerangv1.Request{Body: &boomerangv1.Request_RefreshSession{RefreshSession: &boomerangv1.RefreshSessionRequest{}}})).GetRefreshSession()
	if r.SessionId == old || r.ExpiresAtMs != epoch.Add(90*time.Second).UnixMilli() {
		t.Fatalf("refresh: %v", r)
	}
	if resp := c.call(infoReq()); resp.Error.GetStatus() != boomerangv1.Status_STATUS_SESSION_EXPIRED {
		t.Fatalf("old session after refresh: %v", resp)
	}
	c.session = r.SessionId
	okResponse(t, c.call(infoReq()))
	ts.clock.Advance(time.Minute)
	if resp := c.call(infoReq()); resp.Error.GetStatus() != boomerangv1.Status_STATUS_SESSION_EXPIRED || resp.Error.Message != "session expired; log in again" {
		t.Fatalf("expired session: %v", resp)
	}
}

func writeFrame(t *testing.T, c *tcpClient, body []byte) {
	t.Helper()
	if _, err := c.nc.Write(protowire.AppendBytes(nil, body)); err != nil {
		t.Fatal(err)
	}
}

// TestTCPBrokenFrames checks that a frame that breaks the framing closes
// the connection with an error frame, after the requests read before it
// are answered.
func TestTCPBrokenFrames(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.MaxPayloadBytes, c.MaxFrameBytes = 1<<10, 8<<10 })
	for name, tc := range map[string]struct {
		raw     []byte
		message string
	}{
		"oversize":         {binary.AppendUvarint(nil, 8<<10+1), "exceeds the limit of 8192"},
		"bad length":       {bytes.Repeat([]byte{0xff}, 10), "length prefix overflows"},
		"truncated":        {append(binary.AppendUvarint(nil, 100), make([]byte, 10)...), "stream ended inside a frame"},
		"truncated length": {[]byte{0x80}, "stream ended inside a length prefix"},
		"garbage":          {protowire.AppendBytes(nil, []byte{0xff, 0xff, 0xff}), "does not decode"},
		"request id 0":     {protowire.AppendBytes(nil, mustMarshal(t, infoReq())), "request_id 0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := dialTCP(t, ts.TCPAddr())
			c.login("admin", adminPassword)
			first := c.send(infoReq())
			if _, err := c.nc.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(name, "truncated") {
				_ = c.nc.(*net.TCPConn).CloseWrite()
			}
			if resp := okResponse(t, c.recv()); resp.RequestId != first {
				t.Fatalf("answer to the request before the broken frame: %v", resp)
			}
			e := c.closed(boomerangv1.Status_STATUS_INVALID_REQUEST)
			if !strings.Contains(e.Message, tc.message) || !strings.HasPrefix(e.Message, "broken frame") {
				t.Fatalf("error frame %q, want it to mention %q", e.Message, tc.message)
			}
		})
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTCPTimeouts(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.HandshakeTimeout, c.IdleTimeout = 100*time.Millisecond, 300*time.Millisecond })
	t.Run("handshake", func(t *testing.T) {
		t.Parallel()
		c := dialTCP(t, ts.TCPAddr())
		if e := c.closed(boomerangv1.Status_STATUS_INVALID_REQUEST); !strings.Contains(e.Message, "handshake timeout") {
			t.Fatalf("error frame %q", e.Message)
		}
	})
	t.Run("handshake partial frame", func(t *testing.T) {
		t.Parallel()
		c := dialTCP(t, ts.TCPAddr())
		if _, err := c.nc.Write([]byte{50, 1, 2}); err != nil {
			t.Fatal(err)
		}
		if e := c.closed(boomerangv1.Status_STATUS_INVALID_REQUEST); !strings.Contains(e.Message, "handshake timeout") {
			t.Fatalf("error frame %q", e.Message)
		}
	})
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		c := dialTCP(t, ts.TCPAddr())
		c.login("admin", adminPassword)
		okResponse(t, c.call(infoReq()))
		if e := c.closed(boomerangv1.Status_STATUS_INVALID_REQUEST); !strings.Contains(e.Message, "idle timeout") {
			t.Fatalf("error frame %q", e.Message)
		}
	})
}

// A login that arrived within the handshake timeout and takes longer to
// check (a costly password hash, a loaded server) logs the connection
// in: the timeout is for the login to come, not for the server's work. A
// refused one leaves the connection to the handshake timeout, not to the
// idle timeout.
func TestSlowLoginWithinHandshakeTimeout(t *testing.T) {
	t.Parallel()
	const handshake = 200 * time.Millisecond
	slowHash := auth.HashParams{Time: 48, MemoryKiB: 32 * 1024, Threads: 1}
	ts := startServer(t, func(c *Config) { c.HandshakeTimeout, c.PasswordHash = handshake, slowHash })
	// One after the other: the refused login counts against the client's
	// failed logins, which would hold back the good one.
	t.Run("logs in", func(t *testing.T) {
		c := dialTCP(t, ts.TCPAddr())
		start := time.Now()
		c.login("admin", adminPassword)
		if took := time.Since(start); took < handshake {
			t.Errorf("the login took %v, less than the handshake timeout: make the hash costlier", took)
		}
		okResponse(t, c.call(infoReq()))
	})
	t.Run("refused", func(t *testing.T) {
		c := dialTCP(t, ts.TCPAddr())
		if resp := c.call(loginReq("admin", "not the password")); resp.Error.GetStatus() != boomerangv1.Status_STATUS_UNAUTHORIZED {
			t.Fatalf("login with a wrong password: %v", resp)
		}
		if e := c.closed(boomerangv1.Status_STATUS_INVALID_REQUEST); !strings.Contains(e.Message, "handshake timeout") {
			t.Fatalf("error frame %q", e.Message)
		}
	})
}

// pipeListener hands out the server ends of in-memory pipes, which have
// no buffering: a write blocks until the other side reads it.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// TestTCPBackpressure checks that a connection whose client does not read
// its responses is not read further once MaxInFlight requests are
// outstanding, then recovers when the client reads.
func TestTCPBackpressure(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	cfg := ts.cfg
	cfg.MaxInFlight = 4
	ln := newPipeListener()
	tcp := newTCPServer(&cfg, ts.svc, ts.m, ln)
	tcp.start()
	defer func() {
		if err := tcp.shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	nc := ln.dial()
	defer nc.Close()
	c := &tcpClient{t: t, nc: nc}
	c.br = bufio.NewReader(nc)

	const n = 50
	var written atomic.Int64
	writeErr := make(chan error, 1)
	go func() {
		for i := range n {
			req := infoReq()
			if i == 0 {
				req = loginReq("admin", adminPassword)
			}
			req.RequestId = uint64(i + 1)
			if _, err := protodelim.MarshalTo(nc, req); err != nil {
				writeErr <- err
				return
			}
			written.Add(1)
		}
		writeErr <- nil
	}()
	// Nobody reads: the writer blocks on the first response, every slot
	// fills, and the reader stops, so exactly MaxInFlight requests go in.
	deadline := time.After(waitLimit)
	for written.Load() < int64(cfg.MaxInFlight) {
		select {
		case <-deadline:
			t.Fatalf("only %d requests written", written.Load())
		case err := <-writeErr:
			t.Fatalf("writer ended early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case err := <-writeErr:
		t.Fatalf("all %d requests were read although no response was: %v", n, err)
	case <-time.After(200 * time.Millisecond):
	}
	if got := written.Load(); got != int64(cfg.MaxInFlight) {
		t.Fatalf("%d requests read with no response taken, want %d (MaxInFlight)", got, cfg.MaxInFlight)
	}
	seen := map[uint64]bool{}
	for range n {
		resp := c.recv()
		// Only the login succeeds: the others were sent before its
		// session was known.
		if seen[resp.RequestId] || resp.RequestId == 0 || (resp.RequestId == 1) != (resp.Error == nil) {
			t.Fatalf("response %v", resp)
		}
		seen[resp.RequestId] = true
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
}

// TestTCPStopAnswersEveryRequestRead stops the server while a client
// pipelines registrations: every request read is answered before the
// shutdown error frame, and every task acknowledged is there after a
// restart.
func TestTCPStopAnswersEveryRequestRead(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")
	const n = 2000
	go func() {
		var buf bytes.Buffer
		for i := range n {
			req := registerReq(&boomerangv1.RegisterTaskRequest{Payload: []byte("x"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 3_600_000}})
			req.RequestId, req.SessionId = uint64(i+1), c.session
			_, _ = protodelim.MarshalTo(&buf, req)
		}
		_, _ = c.nc.Write(buf.Bytes())
	}()
	// Stop once the server has answered some requests.
	acked := map[uint64]bool{}
	for len(acked) < 10 {
		resp := okResponse(t, c.recv())
		acked[resp.GetRegisterTask().Task.Id] = true
	}
	stopped := make(chan error, 1)
	go func() { stopped <- ts.Stop(context.Background()) }()
	var final *boomerangv1.Response
	for {
		resp := c.recv()
		if resp.RequestId == 0 {
			final = resp
			break
		}
		if resp.Error == nil {
			acked[resp.GetRegisterTask().Task.Id] = true
		} else if resp.Error.Status != boomerangv1.Status_STATUS_BUSY {
			t.Fatalf("during shutdown: %v", resp)
		}
	}
	if final.Error.GetStatus() != boomerangv1.Status_STATUS_BUSY || !strings.Contains(final.Error.Message, "shutting down") {
		t.Fatalf("final frame %v", final)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	ts.Server = nil
	ts.start(t)
	for after := uint64(0); ; {
		resp, err := ts.svc.ListTasks(context.Background(), alice, &boomerangv1.ListTasksRequest{PageToken: after, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range resp.Tasks {
			delete(acked, task.Id)
		}
		if after = resp.NextPageToken; after == 0 {
			break
		}
	}
	if len(acked) != 0 {
		t.Fatalf("%d acknowledged tasks lost at shutdown", len(acked))
	}
}

func TestTCPConnectionLimit(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.MaxConnections = 1 })
	first := dialTCP(t, ts.TCPAddr())
	first.login("admin", adminPassword) // admitted for sure
	second := dialTCP(t, ts.TCPAddr())
	resp := second.recv()
	if resp.RequestId != 0 || resp.Error.GetStatus() != boomerangv1.Status_STATUS_BUSY || !strings.Contains(resp.Error.Message, "too many connections") {
		t.Fatalf("second connection got %v", resp)
	}
	okResponse(t, first.call(infoReq()))
}

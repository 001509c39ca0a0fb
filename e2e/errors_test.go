package e2e

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// rawConn speaks frames to the server directly.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(waitLimit))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(req *boomerangv1.Request) {
	r.t.Helper()
	if _, err := protodelim.MarshalTo(r.nc, req); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) read() *boomerangv1.Response {
	r.t.Helper()
	resp := new(boomerangv1.Response)
	if err := protodelim.UnmarshalFrom(r.br, resp); err != nil {
		r.t.Fatalf("reading a response: %v", err)
	}
	return resp
}

// expectClosed reads until the server closes the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	resp := new(boomerangv1.Response)
	if err := protodelim.UnmarshalFrom(r.br, resp); err == nil {
		r.t.Fatalf("connection still open; read %v", resp)
	}
}

func (r *rawConn) login(id, password string) string {
	r.t.Helper()
	r.send(&boomerangv1.Request{RequestId: 1, Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: id, Password: password}}})
	resp := r.read()
	if resp.GetLogin().GetSessionId() == "" {
		r.t.Fatalf("login: %v", resp)
	}
	return resp.GetLogin().GetSessionId()
}

func wantStatus(t *testing.T, what string, resp *boomerangv1.Response, id uint64, status boomerangv1.Status) {
	t.Helper()
	if resp.GetRequestId() != id || resp.GetError().GetStatus() != status || resp.GetError().GetMessage() == "" {
		t.Fatalf("%s: got %v, want request %d with %v and a message", what, resp, id, status)
	}
}

// Broken frames end the connection with an error frame; bad requests fail
// alone.
func TestFrameErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "--max-payload-bytes", "4096")
	admin := s.admin(t)
	info, err := admin.GetServerInfo(testContext(t), &boomerangv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("oversize frame", func(t *testing.T) {
		r := dialRaw(t, s.tcp)
		r.write(protowire.AppendVarint(nil, info.GetMaxFrameBytes()+1))
		wantStatus(t, "oversize frame", r.read(), 0, boomerangv1.Status_STATUS_INVALID_REQUEST)
		r.expectClosed()
	})
	t.Run("undecodable envelope", func(t *testing.T) {
		r := dialRaw(t, s.tcp)
		body := []byte{0x0f, 0xff, 0xff} // field 1 with wire type 7: invalid
		r.write(append(protowire.AppendVarint(nil, uint64(len(body))), body...))
		wantStatus(t, "undecodable envelope", r.read(), 0, boomerangv1.Status_STATUS_INVALID_REQUEST)
		r.expectClosed()
	})
	t.Run("length prefix too long", func(t *testing.T) {
		r := dialRaw(t, s.tcp)
		r.write([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
		wantStatus(t, "broken length", r.read(), 0, boomerangv1.Status_STATUS_INVALID_REQUEST)
		r.expectClosed()
	})
	t.Run("bad requests fail alone", func(t *testing.T) {
		r := dialRaw(t, s.tcp)
		r.send(&boomerangv1.Request{RequestId: 7, Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{}}})
		wantStatus(t, "no session", r.read(), 7, boomerangv1.Status_STATUS_UNAUTHORIZED)
		r.send(&boomerangv1.Request{RequestId: 8, SessionId: "made-up", Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{}}})
		wantStatus(t, "unknown session", r.read(), 8, boomerangv1.Status_STATUS_UNAUTHORIZED)
		sess := r.login("admin", adminPassword)
		r.send(&boomerangv1.Request{RequestId: 9, SessionId: sess})
		wantStatus(t, "missing body", r.read(), 9, boomerangv1.Status_STATUS_INVALID_REQUEST)
		r.send(&boomerangv1.Request{RequestId: 10, SessionId: sess, Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoRequest{}}})
		if resp := r.read(); resp.GetRequestId() != 10 || resp.GetGetServerInfo() == nil {
			t.Fatalf("the connection does not work after bad requests: %v", resp)
		}
	})
}

// Refused requests come back as *client.Error with the status and field.
func TestRequestErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "--max-payload-bytes", "4096")
	ctx := testContext(t)
	admin := s.admin(t)
	recv := startReceiver(t, false)
	registerClient(t, admin, "carol", recv.url(), 0)
	registerClient(t, admin, "dave", recv.url(), 0)
	carol, dave := s.dial(t, "carol", "carol-password"), s.dial(t, "dave", "dave-password")

	for _, tc := range []struct {
		name   string
		req    *boomerangv1.RegisterTaskRequest
		status error
		field  string
	}{
		{"oversize payload", &boomerangv1.RegisterTaskRequest{Payload: make([]byte, 5000)}, client.ErrInvalidRequest, "payload"},
		{"negative delay", &boomerangv1.RegisterTaskRequest{When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: -1}}, client.ErrInvalidRequest, "delay"},
		{"negative interval", &boomerangv1.RegisterTaskRequest{RepeatIntervalMs: -5}, client.ErrInvalidRequest, "interval"},
		{"long group", &boomerangv1.RegisterTaskRequest{Group: strings.Repeat("g", 300)}, client.ErrInvalidRequest, "group"},
		{"unknown mode", &boomerangv1.RegisterTaskRequest{Mode: 42}, client.ErrInvalidRequest, "mode"},
		{"bad retry", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Jitter: 2}}, client.ErrInvalidRequest, "jitter"},
		{"bad callback", &boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: "not a url"}}, client.ErrInvalidRequest, "callback"},
	} {
		_, err := carol.RegisterTask(ctx, tc.req)
		var e *client.Error
		if !errors.Is(err, tc.status) || !errors.As(err, &e) || !strings.Contains(e.Field, tc.field) || e.Message == "" {
			t.Errorf("%s: %v (field %q), want %v naming %q", tc.name, err, fieldOf(err), tc.status, tc.field)
		}
	}
	if _, err := carol.UpdateTask(ctx, &boomerangv1.UpdateTaskRequest{}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Errorf("UpdateTask without id: %v", err)
	}
	if _, err := carol.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: 12345}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetTask of a missing id: %v", err)
	}

	// Another client's task is not found, whatever the operation.
	task, err := dave.Schedule(ctx, []byte("dave's"), client.After(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := carol.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: task.GetId()}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("carol GetTask(dave's): %v", err)
	}

	// Wrong password.
	_, err = client.Dial(ctx, s.tcp, client.Credentials{ClientID: "carol", Password: "wrong-password"})
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("wrong password: %v", err)
	}
	_, err = client.Dial(ctx, s.tcp, client.Credentials{ClientID: "nobody", Password: "wrong-password"})
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("unknown client: %v", err)
	}
}

func fieldOf(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// An expired session is SESSION_EXPIRED on the wire; the SDK logs in again
// when it has credentials, and reports it when it has not.
func TestExpiredSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "--session-ttl", "1s")
	r := dialRaw(t, s.tcp)
	sess := r.login("admin", adminPassword)
	saved := client.Session{ID: sess}

	withCreds := s.admin(t)
	ctx := testContext(t)
	// Stale: let the session expire without refreshing it. The SDK
	// refreshes its own, so use the raw session.
	waitFor(t, "the raw session to expire", func() bool {
		r.send(&boomerangv1.Request{RequestId: 2, SessionId: sess, Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoRequest{}}})
		resp := r.read()
		if resp.GetError().GetStatus() == boomerangv1.Status_STATUS_SESSION_EXPIRED {
			return true
		}
		if resp.GetError() != nil {
			t.Fatalf("before expiry: %v", resp)
		}
		return false
	})
	_, err := client.Dial(ctx, s.tcp, client.Credentials{}, client.WithSession(saved))
	if !errors.Is(err, client.ErrSessionExpired) && !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Dial with an expired saved session: %v", err)
	}
	// The SDK with credentials keeps working across several lifetimes.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := range 60 { // 3 s: three session lifetimes
		<-tick.C
		call, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := withCreds.ListClients(call, &boomerangv1.ListClientsRequest{})
		cancel()
		if err != nil {
			t.Fatalf("SDK call %d into 1s sessions: %v", i, err)
		}
	}
}

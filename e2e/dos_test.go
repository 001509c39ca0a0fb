package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Clients that pipeline GetTask on a 1 MiB task and never read the
// answers make the server hold at most its buffer budget, not 256
// responses per connection: the connections stop being read.
func TestUnreadResponsesAreBounded(t *testing.T) {
	t.Parallel()
	const budget = 32 << 20
	s := startServer(t, "", "--max-buffer-bytes", fmt.Sprint(budget), "--max-conn-buffer-bytes", fmt.Sprint(8<<20))
	admin := s.admin(t)
	ctx := testContext(t)
	resp, err := admin.RegisterTask(ctx, &boomerangv1.RegisterTaskRequest{
		Payload: make([]byte, 1<<20), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 3_600_000},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTask().GetId()
	for range 8 {
		r := dialRaw(t, s.tcp)
		session := r.login("admin", adminPassword)
		var frames []byte
		for i := range 300 {
			frames, _ = appendFrame(frames, &boomerangv1.Request{RequestId: uint64(i + 2), SessionId: session,
				Body: &boomerangv1.Request_GetTask{GetTask: &boomerangv1.GetTaskRequest{Id: id}}})
		}
		r.write(frames)
	}
	url := "http://" + s.http + "/metrics"
	var held float64
	waitFor(t, "the server to fill its buffer budget", func() bool {
		_, page := get(t, url)
		held, _ = metric(page, "boomerang_tcp_buffer_bytes")
		return held >= budget-4<<20
	})
	if held > budget {
		t.Fatalf("the server holds %v bytes, over its budget of %d", held, budget)
	}
	// Without the budget this held 2.4 GB of responses.
	if rss := procStatus(t, s.cmd.Process.Pid, "VmRSS"); rss > 400<<10 {
		t.Fatalf("server resident memory %d MiB with 8 stalled connections", rss>>10)
	}
	// Small requests of other connections still get through.
	if _, err := s.dial(t, "admin", adminPassword).GetServerInfo(ctx, &boomerangv1.GetServerInfoRequest{}); err != nil {
		t.Fatalf("another client while the budget is spent: %v", err)
	}
}

func appendFrame(b []byte, req *boomerangv1.Request) ([]byte, error) {
	var sb strings.Builder
	if _, err := protodelim.MarshalTo(&sb, req); err != nil {
		return b, err
	}
	return append(b, sb.String()...), nil
}

// Connections that never log in get a smaller share than the connection
// limit, per source too, and are closed after the handshake timeout; a
// real client still gets in.
func TestConnectionsThatDoNotLogIn(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "--max-connections", "50", "--max-pending-logins", "20",
		"--max-pending-logins-per-addr", "8", "--handshake-timeout", "2s")
	var accepted []*rawConn
	refused := 0
	for range 50 {
		nc := dialFrom(t, "127.0.0.2", s.tcp)
		_ = nc.SetDeadline(time.Now().Add(waitLimit))
		r := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
		// A refused connection may be closed before this arrives.
		_, _ = protodelim.MarshalTo(nc, &boomerangv1.Request{RequestId: 1, Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoRequest{}}})
		resp := r.read()
		switch {
		case resp.GetRequestId() == 1 && resp.GetError().GetStatus() == boomerangv1.Status_STATUS_UNAUTHORIZED:
			accepted = append(accepted, r)
		case resp.GetRequestId() == 0 && resp.GetError().GetStatus() == boomerangv1.Status_STATUS_BUSY &&
			strings.Contains(resp.GetError().GetMessage(), "waiting to log in"):
			refused++
		default:
			t.Fatalf("unexpected answer %v", resp)
		}
	}
	if len(accepted) != 8 || refused != 42 {
		t.Fatalf("%d connections from one source accepted and %d refused, want 8 and 42", len(accepted), refused)
	}
	// Another source logs in while they wait.
	c := s.admin(t)
	if _, err := c.GetServerInfo(testContext(t), &boomerangv1.GetServerInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range accepted {
		resp := r.read()
		if resp.GetRequestId() != 0 || !strings.Contains(resp.GetError().GetMessage(), "no login within the handshake timeout") {
			t.Fatalf("a connection that never logged in got %v", resp)
		}
		r.expectClosed()
	}
}

// A request body trickled byte by byte does not hold an HTTP connection
// past the read timeout.
func TestHTTPTrickledBody(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "--http-read-timeout", "1s")
	nc, err := net.Dial("tcp", s.http)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(waitLimit))
	_, err = io.WriteString(nc, "POST /boomerang.v1.BoomerangService/Login HTTP/1.1\r\nHost: boomerang\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("the server kept the connection: %v", err)
	}
}

// A flood of logins for made-up ids costs no password hashing and is cut
// to the source's share; a login from elsewhere still works.
func TestLoginFlood(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	before := cpuTime(t, s.cmd.Process.Pid)
	nc := dialFrom(t, "127.0.0.2", s.tcp)
	_ = nc.SetDeadline(time.Now().Add(waitLimit))
	r := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	const attempts = 400
	var frames []byte
	for i := range attempts {
		frames, _ = appendFrame(frames, &boomerangv1.Request{RequestId: uint64(i + 1), Body: &boomerangv1.Request_Login{
			Login: &boomerangv1.LoginRequest{ClientId: fmt.Sprintf("guess-%d", i), Password: "some-password"}}})
	}
	r.write(frames)
	busy := 0
	for range attempts {
		switch resp := r.read(); resp.GetError().GetStatus() {
		case boomerangv1.Status_STATUS_BUSY:
			busy++
		case boomerangv1.Status_STATUS_UNAUTHORIZED:
		default:
			t.Fatalf("login of a made-up id: %v", resp)
		}
	}
	if busy < attempts/2 {
		t.Fatalf("%d of %d logins from one source refused as busy", busy, attempts)
	}
	// Hashing 400 passwords takes many seconds of CPU.
	if used := cpuTime(t, s.cmd.Process.Pid) - before; used > 3*time.Second {
		t.Fatalf("the flood cost the server %v of CPU", used)
	}
	s.admin(t) // from 127.0.0.1: another source
}

package e2e

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func callback(protocol boomerangv1.Protocol, endpoint string) *boomerangv1.Callback {
	return &boomerangv1.Callback{Protocol: protocol, Endpoint: endpoint}
}

// registerWith registers a task with a callback override and returns the
// error.
func registerWith(t *testing.T, c *client.Client, cb *boomerangv1.Callback) error {
	t.Helper()
	_, err := c.RegisterTask(testContext(t), &boomerangv1.RegisterTaskRequest{Payload: []byte("x"), Callback: cb})
	return err
}

// The default policy refuses link-local, metadata and unspecified
// destinations when a callback is registered.
func TestCallbackPolicyDefault(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := s.admin(t)
	registerClient(t, admin, "erin", "http://127.0.0.1:1/hook", 0)
	erin := s.dial(t, "erin", "erin-password")
	for _, cb := range []*boomerangv1.Callback{
		callback(boomerangv1.Protocol_PROTOCOL_HTTP, "http://169.254.169.254/latest/meta-data/"),
		callback(boomerangv1.Protocol_PROTOCOL_HTTP, "http://metadata.google.internal/computeMetadata/v1/"),
		callback(boomerangv1.Protocol_PROTOCOL_HTTP, "http://[fe80::1]/"),
		callback(boomerangv1.Protocol_PROTOCOL_TCP, "0.0.0.0:22"),
		callback(boomerangv1.Protocol_PROTOCOL_UDP, "[::]:53"),
	} {
		err := registerWith(t, erin, cb)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Field != "callback.endpoint" || !strings.Contains(ce.Message, "callback policy") {
			t.Errorf("callback %s: %v, want refused by the policy", cb.Endpoint, err)
		}
	}
	_, err := admin.RegisterClient(testContext(t), &boomerangv1.RegisterClientRequest{ClientId: "mallory", Password: "mallory-password",
		Callback: callback(boomerangv1.Protocol_PROTOCOL_HTTP, "http://169.254.169.254/")})
	if !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("a client with a metadata callback: %v", err)
	}
}

// A name that passes the policy as written is checked again once
// resolved: "localhost" reaches no loopback address when loopback is
// denied, so DNS cannot be used to slip past the policy.
func TestCallbackPolicyAfterResolution(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	s := startServer(t, "", "--callback-deny", "default", "--callback-deny", "127.0.0.0/8", "--callback-deny", "::1")
	admin := s.admin(t)
	registerClient(t, admin, "erin", "http://localhost:"+port+"/hook", 0)
	erin := s.dial(t, "erin", "erin-password")
	if err := registerWith(t, erin, callback(boomerangv1.Protocol_PROTOCOL_HTTP, "http://127.0.0.1:"+port+"/hook")); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("a literal loopback callback: %v", err)
	}
	if _, err := erin.RegisterTask(testContext(t), &boomerangv1.RegisterTaskRequest{Payload: []byte("via-name")}); err != nil {
		t.Fatalf("a callback by name is checked at dial time, not refused here: %v", err)
	}
	dl := awaitDeadLetter(t, erin, "via-name")
	if !strings.Contains(dl.GetLastError(), "not allowed by the callback policy") || !strings.Contains(dl.GetLastError(), "127.0.0.1") {
		t.Fatalf("dead letter error %q", dl.GetLastError())
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the denied receiver was reached %d times", n)
	}
}

// What an internal target answers never reaches the client's dead
// letters: an HTTP error shows its status only, and a TCP service's
// banner nothing.
func TestCallbackAnswersNotEchoed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "INTERNAL-SECRET-DATA: db password is hunter2", http.StatusInternalServerError)
	}))
	defer srv.Close()
	banner := listenLoopback(t)
	go func() {
		for {
			c, err := banner.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.2 INTERNAL-SECRET-BANNER\r\n")
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	s := startServer(t, "")
	registerClient(t, s.admin(t), "erin", srv.URL+"/hook", 0)
	erin := s.dial(t, "erin", "erin-password")
	if _, err := erin.RegisterTask(testContext(t), &boomerangv1.RegisterTaskRequest{Payload: []byte("http")}); err != nil {
		t.Fatal(err)
	}
	if dl := awaitDeadLetter(t, erin, "http"); dl.GetLastError() != "delivery: HTTP 500 Internal Server Error" {
		t.Fatalf("dead letter error %q", dl.GetLastError())
	}
	tcp := &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_TCP, Endpoint: banner.Addr().String(), TimeoutMs: 2000}
	if _, err := erin.RegisterTask(testContext(t), &boomerangv1.RegisterTaskRequest{Payload: []byte("tcp"), Callback: tcp}); err != nil {
		t.Fatal(err)
	}
	if dl := awaitDeadLetter(t, erin, "tcp"); strings.Contains(dl.GetLastError(), "SECRET") || strings.Contains(dl.GetLastError(), "SSH") {
		t.Fatalf("dead letter error %q shows the banner", dl.GetLastError())
	}
}

// An admin narrows where one client's callbacks may go.
func TestCallbackRulesPerClient(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	admin.fails(1, "callback.endpoint", "client", "register", "erin", "--new-password", "erin-password",
		"--callback", "http://127.0.0.1:1/hook", "--callback-allow", "*.hooks.example.com")
	admin.ok("client", "register", "erin", "--new-password", "erin-password",
		"--callback", "https://a.hooks.example.com/hook", "--callback-allow", "*.hooks.example.com", "--callback-allow", "192.0.2.0/24")
	erin := newCLI(t, s.tcp)
	erin.env = append(erin.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	erin.fails(1, "the client's callback rules do not allow it", "set", "x", "--callback", "http://127.0.0.1:1/hook")
	erin.ok("set", "x", "--callback", "tcp://192.0.2.7:9000", "--delay", "1h")
	if out := admin.ok("client", "show", "erin"); !strings.Contains(out, "*.hooks.example.com, 192.0.2.0/24") {
		t.Fatalf("client show:\n%s", out)
	}
	admin.ok("client", "update", "erin", "--no-callback-rules")
	erin.ok("set", "x", "--callback", "http://127.0.0.1:1/hook", "--delay", "1h")
}

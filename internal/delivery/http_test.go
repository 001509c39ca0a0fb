package delivery

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func httpCallback(url string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_HTTP, Endpoint: url}
}

// receiverServer serves an HTTPReceiver with secret on loopback; every
// delivery goes to got.
func receiverServer(t *testing.T, secret []byte, h client.Handler) *httptest.Server {
	t.Helper()
	r, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: secret, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPDeliversSignedWebhook(t *testing.T) {
	got := make(chan *boomerangv1.Delivery, 1)
	var headers http.Header
	r, _ := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: testSecret, Handler: func(_ context.Context, d *boomerangv1.Delivery) error {
		got <- d
		return nil
	}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		headers = req.Header.Clone()
		r.ServeHTTP(w, req)
	}))
	defer srv.Close()
	e, _ := newEngine(t, httpCallback(srv.URL+"/hook"), nil)

	tk := task("invoice 42")
	tk.Group = "customer 7/é\n"
	if err := deliver(e, tk, 3).wait(t); err != nil {
		t.Fatalf("delivery failed: %v", err)
	}
	d := <-got
	if d.TaskId != tk.Id || d.Attempt != 3 || d.Client != "acme" || d.Group != tk.Group ||
		d.FireAtMs != tk.DueMs || string(d.Payload) != "invoice 42" || d.DeliveryId == 0 {
		t.Fatalf("receiver got %v", d)
	}
	want := map[string]string{
		webhook.HeaderTaskID:  strconv.FormatUint(tk.Id, 10),
		webhook.HeaderAttempt: "3",
		webhook.HeaderFireAt:  strconv.FormatInt(tk.DueMs, 10),
		webhook.HeaderClient:  "acme",
		webhook.HeaderGroup:   "customer%207%2F%C3%A9%0A",
		"Content-Type":        "application/octet-stream",
	}
	for k, v := range want {
		if headers.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, headers.Get(k), v)
		}
	}
	// The documented recipe reproduces the signature.
	sig := webhook.Sign(testSecret, headers.Get(webhook.HeaderTimestamp), headers.Get(webhook.HeaderTaskID),
		headers.Get(webhook.HeaderAttempt), headers.Get(webhook.HeaderFireAt), headers.Get(webhook.HeaderClient),
		headers.Get(webhook.HeaderGroup), []byte("invoice 42"))
	if headers.Get(webhook.HeaderSignature) != "v1="+sig {
		t.Errorf("signature %q, want v1=%s", headers.Get(webhook.HeaderSignature), sig)
	}
}

func TestHTTPStatuses(t *testing.T) {
	status := atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		code := int(status.Load())
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.Header().Set("Location", "/elsewhere")
		w.WriteHeader(code)
		_, _ = w.Write([]byte("  busy\nsecond line"))
	}))
	defer srv.Close()
	e, _ := newEngine(t, httpCallback(srv.URL), nil)
	for _, tc := range []struct {
		code      int
		ok, retry bool
	}{
		{200, true, false}, {201, true, false}, {202, true, false}, {204, true, false},
		{301, false, false}, {302, false, false}, {307, false, false}, {308, false, false},
		{400, false, false}, {401, false, false}, {403, false, false}, {404, false, false},
		{405, false, false}, {409, false, false}, {410, false, false}, {413, false, false}, {422, false, false},
		{408, false, true}, {425, false, true}, {429, false, true},
		{500, false, true}, {501, false, true}, {502, false, true}, {503, false, true}, {504, false, true},
	} {
		status.Store(int64(tc.code))
		tk := task("x")
		err := deliver(e, tk, 1).wait(t)
		if (err == nil) != tc.ok {
			t.Errorf("HTTP %d: outcome %v, want ok=%v", tc.code, err, tc.ok)
			continue
		}
		if tc.ok {
			continue
		}
		se, isStatus := errors.AsType[*StatusError](err)
		if !isStatus || se.Code != tc.code || strings.Contains(err.Error(), "busy") || !errors.Is(err, ErrRejected) {
			t.Errorf("HTTP %d: error %#v", tc.code, err)
		}
		if _, retry := e.Next(tk, 1, err); retry != tc.retry {
			t.Errorf("HTTP %d: retry %v, want %v", tc.code, retry, tc.retry)
		}
		if tc.code == http.StatusTooManyRequests && se.RetryAfter != 7*time.Second {
			t.Errorf("HTTP 429: Retry-After %v, want 7s", se.RetryAfter)
		}
	}
}

func TestHTTPRetryAfterStretchesBackoff(t *testing.T) {
	e, _ := newEngine(t, httpCallback("http://127.0.0.1:1"), func(c *Config) {
		c.DefaultRetry = &storepb.RetryPolicy{Backoff: storepb.BackoffKind_BACKOFF_KIND_FIXED, InitialIntervalMs: 1000, MaxIntervalMs: 60_000, Jitter: 0.2}
	})
	tk := task("x")
	for _, tc := range []struct {
		after, lo, hi time.Duration
	}{
		{0, 800 * time.Millisecond, time.Second},
		{500 * time.Millisecond, 800 * time.Millisecond, time.Second},
		{7 * time.Second, 7 * time.Second, 7 * time.Second},
		{time.Hour, time.Minute, time.Minute}, // capped at the policy's max interval
	} {
		d, retry := e.Next(tk, 1, &StatusError{Code: 503, RetryAfter: tc.after})
		if !retry || d < tc.lo || d > tc.hi {
			t.Errorf("Retry-After %v: delay %v retry %v, want %v to %v", tc.after, d, retry, tc.lo, tc.hi)
		}
	}
}

func TestHTTPWrongSignatureIsPermanent(t *testing.T) {
	called := atomic.Bool{}
	srv := receiverServer(t, []byte("another secret"), func(context.Context, *boomerangv1.Delivery) error {
		called.Store(true)
		return nil
	})
	e, _ := newEngine(t, httpCallback(srv.URL), nil)
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != http.StatusUnauthorized {
		t.Fatalf("outcome %v, want HTTP 401", err)
	}
	if _, retry := e.Next(tk, 1, err); retry || !IsPermanent(err) {
		t.Fatalf("a wrong signature is retried: %v", err)
	}
	if called.Load() {
		t.Fatal("the handler ran for a delivery with a wrong signature")
	}
}

func TestHTTPHandlerErrorIsRetried(t *testing.T) {
	srv := receiverServer(t, testSecret, func(context.Context, *boomerangv1.Delivery) error {
		return errors.New("database down")
	})
	e, _ := newEngine(t, httpCallback(srv.URL), nil)
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if se, ok := errors.AsType[*StatusError](err); !ok || se.Code != 500 || err.Error() != "delivery: HTTP 500 Internal Server Error" {
		t.Fatalf("outcome %v, want HTTP 500 and nothing of the body", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a 500 is not retried")
	}
}

func TestHTTPSlowReceiverTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := receiverServer(t, testSecret, func(ctx context.Context, _ *boomerangv1.Delivery) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	defer close(release)
	cb := httpCallback(srv.URL)
	cb.TimeoutMs = 100
	e, _ := newEngine(t, cb, nil)
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("outcome %v, want a timeout", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a timeout is not retried")
	}
	if s := e.Stats().Pools[DefaultPool]; s.InUse != 0 {
		t.Fatalf("the timed-out attempt still holds its slot: %+v", s)
	}
}

func TestHTTPRefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	e, _ := newEngine(t, httpCallback("http://"+addr+"/hook"), nil)
	tk := task("x")
	err = deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("outcome %v, want unreachable", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a refused connection is not retried")
	}
}

func TestHTTPReceiverDiesMidDelivery(t *testing.T) {
	var hijacked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hijacked.Add(1) == 1 {
			// The body was read; the receiver dies before answering.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	e, _ := newEngine(t, httpCallback(srv.URL), nil)
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("outcome %v, want unreachable", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a connection lost mid-delivery is not retried")
	}
	if err := deliver(e, tk, 2).wait(t); err != nil {
		t.Fatalf("the next attempt failed: %v", err)
	}
}

func TestHTTPReusesConnections(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	e, _ := newEngine(t, httpCallback(srv.URL), nil)
	for range 50 {
		if err := deliver(e, task("x"), 1).wait(t); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Fatalf("50 sequential deliveries opened %d connections, want 1", conns)
	}
}

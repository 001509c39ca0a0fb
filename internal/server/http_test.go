package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/store"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	defer http.DefaultClient.CloseIdleConnections()
	ts.addClients(t)
	base := "http://" + ts.HTTPAddr()
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")
	okResponse(t, c.call(registerReq(&boomerangv1.RegisterTaskRequest{When: delay(60_000)})))
	if resp := c.call(getReq(12345)); resp.Error.GetStatus() != boomerangv1.Status_STATUS_NOT_FOUND {
		t.Fatal(resp)
	}

	wants := []string{
		`boomerang_requests_total{operation="Login",status="OK"} 1`,
		`boomerang_requests_total{operation="RegisterTask",status="OK"} 1`,
		`boomerang_requests_total{operation="GetTask",status="NOT_FOUND"} 1`,
		`boomerang_request_duration_seconds_count{operation="RegisterTask"} 1`,
		"boomerang_tasks_registered_total 1",
		"boomerang_deliveries_started_total 0",
		"boomerang_deliveries_succeeded_total 0",
		"boomerang_deliveries_failed_total 0",
		"boomerang_dead_letters 0",
		"boomerang_wheel_timers",
		"boomerang_blocked_groups 0",
		"boomerang_inbox_depth",
		"boomerang_deliveries_waiting 0",
		"boomerang_active_groups",
		"boomerang_scheduler_failed 0",
		"boomerang_outcomes_unrecorded_total 0",
		"boomerang_tcp_connections 1",
		"boomerang_sessions 1",
		"boomerang_store_commits_total", "boomerang_store_synced_commits_total",
		"boomerang_store_flushed_bytes_total", "boomerang_store_compacted_bytes_total",
		"go_goroutines",
	}
	// A raw TCP request is counted once its response is flushed, which
	// may be just after the client read it: poll.
	var missing []string
	poll(t, "the metrics", func() bool {
		code, body := get(t, base+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d", code)
		}
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(body, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) > 0 {
			t.Logf("/metrics lacks %q", missing)
		}
		return len(missing) == 0
	})
}

func TestReadyzFollowsLifecycle(t *testing.T) {
	t.Parallel()
	s, err := New(Config{DataDir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.serveReady(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before Start: %d", rec.Code)
	}
	ts := startServer(t, nil)
	rec = httptest.NewRecorder()
	ts.serveReady(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/readyz while running: %d", rec.Code)
	}
	srv := ts.Server
	ts.stop(t)
	rec = httptest.NewRecorder()
	srv.serveReady(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz after Stop: %d", rec.Code)
	}
	if err := srv.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// The profiler is served only when asked for.
func TestPprofIsOptIn(t *testing.T) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	off := startServer(t, nil)
	if code, _ := get(t, "http://"+off.HTTPAddr()+"/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("/debug/pprof/ without Pprof: %d, want 404", code)
	}
	on := startServer(t, func(c *Config) { c.Pprof = true })
	if code, body := get(t, "http://"+on.HTTPAddr()+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/ with Pprof: %d %.80q", code, body)
	}
}

// A storage failure that stops the scheduler shows at once: /readyz and
// /healthz answer 503 with the reason, and the metric says so.
func TestStorageFailureIsVisible(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	ts := startServer(t, func(c *Config) { c.DataDir, c.StoreFS = "/data", fs })
	ts.addClients(t)
	fs.FailWrites(true)
	if _, err := ts.svc.RegisterTask(ctx, alice, &boomerangv1.RegisterTaskRequest{}); err == nil {
		t.Fatal("a registration on a failing disk succeeded")
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		code, body := get(t, "http://"+ts.HTTPAddr()+path)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "storage failure") {
			t.Errorf("%s after a storage failure: %d %q", path, code, body)
		}
	}
	_, metrics := get(t, "http://"+ts.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, "boomerang_scheduler_failed 1") {
		t.Error("boomerang_scheduler_failed is not 1")
	}
	// Stopping reports the failure; the test's own cleanup would take it
	// for one of its own.
	fs.FailWrites(false)
	if err := ts.Server.Stop(context.Background()); err == nil {
		t.Error("Stop after a storage failure reported none")
	}
	ts.Server = nil
}

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
)

// /metrics and /debug/pprof/ move to their own listener with
// --metrics-addr, and need a token with --metrics-token.
func TestMetricsRestricted(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "--metrics-addr", "127.0.0.1:0", "--pprof")
	if code, _ := get(t, "http://"+s.http+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on the API port: %d", code)
	}
	if code, _ := get(t, "http://"+s.http+"/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("/debug/pprof/ on the API port: %d", code)
	}
	if code, page := get(t, "http://"+s.metrics+"/metrics"); code != http.StatusOK || !strings.Contains(page, "boomerang_tasks_registered_total") {
		t.Fatalf("/metrics on the metrics port: %d", code)
	}
	if code, _ := get(t, "http://"+s.metrics+"/debug/pprof/"); code != http.StatusOK {
		t.Fatalf("/debug/pprof/ on the metrics port: %d", code)
	}

	tok := startServer(t, "", "--metrics-token", "a-metrics-token", "--pprof")
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		if code, _ := get(t, "http://"+tok.http+path); code != http.StatusUnauthorized {
			t.Fatalf("%s without the token: %d", path, code)
		}
		if code, _ := get(t, "http://"+tok.http+path, "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong token: %d", path, code)
		}
		if code, _ := get(t, "http://"+tok.http+path, "Authorization", "Bearer a-metrics-token"); code != http.StatusOK {
			t.Fatalf("%s with the token: %d", path, code)
		}
	}
	if code, _ := get(t, "http://"+tok.http+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz needs no token: %d", code)
	}
}

// The data directory is the user's alone, and one that others may read
// is refused unless the operator says otherwise.
func TestDataDirectoryPermissions(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	s := startServer(t, dir)
	registerClient(t, s.admin(t), "erin", "http://127.0.0.1:1/hook", 0)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", path, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := failStart(t, dir, nil); !strings.Contains(out, "chmod 700") || !strings.Contains(out, "--allow-open-data-dir") {
		t.Fatalf("start on a directory others may read:\n%s", out)
	}
	startServer(t, dir, "--allow-open-data-dir")
}

// Signing secrets are sealed at rest; the key can come from the
// environment and be rotated, and a start without the right key fails.
func TestSigningSecretsAtRest(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	s := startServer(t, dir)
	s.awaitLog(t, "the generated-key warning", func(kv map[string]string) bool {
		return strings.Contains(kv["msg"], "generated a secret key into the data directory")
	})
	hook, got := signedReceiver(t)
	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	admin.ok("client", "register", "erin", "--new-password", "erin-password", "--callback", hook, "--signing-secret", "a-findable-signing-secret")
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if path := findInDir(t, dir, "a-findable-signing-secret"); path != "" {
		t.Fatalf("%s holds the signing secret in the clear", path)
	}

	k1, k2 := auth.EncodeKey(auth.GenerateKey()), auth.EncodeKey(auth.GenerateKey())
	// The key generated into the directory gives way to a configured one.
	s = startServerEnv(t, dir, []string{"BOOMERANG_SECRET_KEY=" + k1})
	s.awaitLog(t, "the generated key's removal", func(kv map[string]string) bool {
		return strings.Contains(kv["msg"], "removed the generated secret key")
	})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.key")); !os.IsNotExist(err) {
		t.Fatalf("the generated key is still in the data directory: %v", err)
	}
	if out := failStart(t, dir, []string{"BOOMERANG_SECRET_KEY=" + k2}); !strings.Contains(out, "secret key that is not configured") {
		t.Fatalf("start with a key that sealed nothing:\n%s", out)
	}
	// Rotation: the new key first, the old one after it, for one start.
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("# new key first\n"+k2+"\n"+k1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, "--secret-key-file", keyFile)
	s.awaitLog(t, "the records sealed again", func(kv map[string]string) bool {
		return kv["msg"] == "sealed signing secrets with the current secret key" && kv["clients"] == "2"
	})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s = startServerEnv(t, dir, []string{"BOOMERANG_SECRET_KEY=" + k2})
	erin := newCLI(t, s.tcp)
	erin.ok("set", "sealed", "--client", "erin", "--password", "erin-password")
	if h := nextHeader(t, got); !verifies(h, "sealed", "a-findable-signing-secret") {
		t.Fatalf("the webhook is not signed with the secret: %q", h.Get("Boomerang-Signature"))
	}
}

// findInDir returns a file under dir that holds s, or "".
func findInDir(t *testing.T, dir, s string) string {
	t.Helper()
	found := ""
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(s)) {
			found = path
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A configured admin password that is not the existing admin's is
// called out at start-up.
func TestAdminPasswordNotInUse(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	if err := startServer(t, dir).stop(); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--admin-password", "another-password")
	s.awaitLog(t, "the warning", func(kv map[string]string) bool {
		return kv["level"] == "WARN" && strings.Contains(kv["msg"], "the configured admin password is not in use")
	})
}

// After a restart the server logs what it recovered.
func TestRecoverySummary(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	hook := hangingReceiver(t, arrived)
	dir := newDataDir(t)
	s := startServer(t, dir)
	admin := s.admin(t)
	registerClient(t, admin, "erin", hook, 0)
	erin := s.dial(t, "erin", "erin-password")
	ctx := testContext(t)
	for _, delay := range []int64{0, 3_600_000, 7_200_000} {
		if _, err := erin.RegisterTask(ctx, &boomerangv1.RegisterTaskRequest{Payload: []byte("x"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: delay}}); err != nil {
			t.Fatal(err)
		}
	}
	<-arrived // the task due now is being delivered: it stays due
	s.kill()
	s = startServer(t, dir)
	kv := s.awaitLog(t, "the recovery summary", func(kv map[string]string) bool { return kv["msg"] == "recovered" })
	if kv["tasks"] != "3" || kv["overdue"] != "1" || kv["blocked_groups"] != "0" || !strings.HasSuffix(kv["ready_after"], "s") {
		t.Fatalf("recovery summary %v", kv)
	}
}

// hangingReceiver takes webhooks and answers none; it tells arrived when
// one comes.
func hangingReceiver(t *testing.T, arrived chan<- struct{}) string {
	t.Helper()
	quit := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	})}
	ln := listenLoopback(t)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(quit)
		_ = srv.Close()
	})
	return "http://" + ln.Addr().String() + "/hook"
}

// The JSON log shows durations as durations, and a clean stop without an
// error field.
func TestLogLines(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(filepath.Join(binDir, "boomerang"), "serve", "--data-dir", newDataDir(t), "--tcp-addr", "127.0.0.1:0",
		"--http-addr", "127.0.0.1:0", "--admin-password", adminPassword, "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan map[string]any, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	await := func(msg string) map[string]any {
		t.Helper()
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("boomerang exited before logging %q", msg)
				}
				if strings.HasPrefix(m["msg"].(string), msg) {
					return m
				}
			case <-time.After(waitLimit):
				t.Fatalf("no %q line", msg)
			}
		}
	}
	await("listening")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if m := await("shutting down"); m["timeout"] != "30s" {
		t.Fatalf("shutdown line %v: want timeout \"30s\"", m)
	}
	if m := await("stopped"); m["level"] != "INFO" || m["err"] != nil {
		t.Fatalf("stopped line %v", m)
	}
}

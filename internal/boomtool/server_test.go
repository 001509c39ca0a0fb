package boomtool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/server"
)

const adminPassword = "tool-admin-password"

// startServer runs a real server in-process on free ports. The tests
// schedule tasks in the future, so nothing is delivered.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdminPassword: adminPassword,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv.TCPAddr()
}

func (tl *tool) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := tl.run("", args...)
	if code != 0 {
		t.Fatalf("boomtool %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func (tl *tool) json(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := tl.ok(t, append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("boomtool %v printed %q: %v", args, out, err)
	}
	return m
}

// The main flows in-process: login with a saved session, client
// registration, and a task's life; the e2e package runs every command
// through the binary.
func TestAgainstServer(t *testing.T) {
	addr := startServer(t)
	admin := newTool(t)
	admin.now = time.Now()
	out := admin.ok(t, "login", "--addr", addr, "--client", "admin", "--password", adminPassword)
	if !strings.Contains(out, "Logged in to "+addr+" as admin (admin)") {
		t.Fatalf("login printed %q", out)
	}
	var saved savedSession
	b, err := os.ReadFile(filepath.Join(admin.dir, "boomerang", "session.json"))
	if err != nil || json.Unmarshal(b, &saved) != nil || saved.Addr != addr || saved.Client != "admin" || !saved.Admin {
		t.Fatalf("session file %s: %v", b, err)
	}
	// The saved session carries the address too: no --addr from now on.
	reg := admin.json(t, "client", "register", "tina", "--callback", "udp://127.0.0.1:9")
	pw, _ := reg["generatedPassword"].(string)
	if len(pw) < 16 || reg["client"].(map[string]any)["id"] != "tina" {
		t.Fatalf("client register -o json = %v", reg)
	}
	if out := admin.ok(t, "client", "list"); !strings.Contains(out, "tina") || !strings.Contains(out, "udp://127.0.0.1:9") {
		t.Fatalf("client list:\n%s", out)
	}

	tina := newTool(t)
	tina.now = time.Now()
	tina.env[EnvAddr], tina.env[EnvClient], tina.env[EnvPassword] = addr, "tina", pw
	out = tina.ok(t, "set", "hello", "--delay", "1h", "--group", "g")
	if !strings.HasPrefix(out, "Scheduled task ") {
		t.Fatalf("set printed %q", out)
	}
	id := strings.Fields(out)[2]
	id = strings.TrimSuffix(id, ",")
	if out := tina.ok(t, "show", id); !strings.Contains(out, `"hello"`) || !strings.Contains(out, "(in 1h)") && !strings.Contains(out, "(in 59m59s)") {
		t.Fatalf("show:\n%s", out)
	}
	tina.ok(t, "update", id, "--every", "5m")
	if out := tina.ok(t, "list"); !strings.Contains(out, "every 5m") || !strings.Contains(out, id) {
		t.Fatalf("list:\n%s", out)
	}
	tina.ok(t, "delete", id)
	code, _, errOut := tina.run("", "show", id)
	if code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("show after delete: exit %d, %q", code, errOut)
	}
	if out := tina.ok(t, "list"); !strings.Contains(out, "No tasks.") {
		t.Fatalf("empty list:\n%s", out)
	}
	code, _, errOut = tina.run("", "client", "list")
	if code != 1 || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("client list as tina: exit %d, %q", code, errOut)
	}
	if out := tina.ok(t, "dlq", "list"); !strings.Contains(out, "No dead letters.") {
		t.Fatalf("dlq list:\n%s", out)
	}
	for _, g := range []string{"a", "a", "b"} {
		tina.ok(t, "set", "bulk", "--delay", "1h", "--group", g)
	}
	if out := tina.ok(t, "delete-all", "--group", "a", "--dry-run"); !strings.Contains(out, "Would cancel 2 of 2 matching tasks") {
		t.Fatalf("delete-all --dry-run: %q", out)
	}
	if out := tina.ok(t, "delete-all", "--group", "a"); !strings.Contains(out, "Cancelled 2 of 2 matching tasks") {
		t.Fatalf("delete-all --group: %q", out)
	}
	if out := tina.ok(t, "delete-all"); !strings.Contains(out, "Cancelled 1 of 1 matching tasks") {
		t.Fatalf("delete-all: %q", out)
	}
	if out := tina.json(t, "dlq", "purge", "--error", "HTTP 404", "--dry-run"); len(out) != 0 {
		t.Fatalf("dlq purge with no dead letters: %v", out)
	}
	out = tina.ok(t, "set", "report", "--cron", "0 9 * * MON-FRI", "--tz", "Europe/Zurich")
	cronID := strings.TrimSuffix(strings.Fields(out)[2], ",")
	if out := tina.ok(t, "update", cronID, "--cron", "30 8 * * *", "--tz", "Europe/Zurich"); !strings.Contains(out, `cron "30 8 * * *" in Europe/Zurich`) {
		t.Fatalf("update --cron printed %q", out)
	}
	if out := tina.ok(t, "list"); !strings.Contains(out, `cron "30 8 * * *" in Europe/Zurich`) {
		t.Fatalf("list with a cron task:\n%s", out)
	}
	out = tina.ok(t, "show", cronID)
	if !strings.Contains(out, `cron "30 8 * * *" in Europe/Zurich`) || strings.Count(out, " 08:30:00 CE") != 5 {
		t.Fatalf("show of a cron task:\n%s", out)
	}
	tina.ok(t, "delete", cronID)
	out = tina.ok(t, "set", "v1", "--replace", "reindex", "--debounce", "1h", "--max-wait", "2h")
	replaceID := strings.TrimSuffix(strings.Fields(out)[2], ",")
	out = tina.ok(t, "set", "v2", "--replace", "reindex", "--debounce", "1h")
	if !strings.HasPrefix(out, "Replaced waiting task "+replaceID+" with replace key \"reindex\"") {
		t.Fatalf("set --replace again printed %q", out)
	}
	if out := tina.ok(t, "show", replaceID); !strings.Contains(out, `"v2"`) || !strings.Contains(out, "reindex") {
		t.Fatalf("show of a replaced task:\n%s", out)
	}
	tina.ok(t, "delete", replaceID)
	admin.ok(t, "client", "update", "tina", "--group-rate", "5/1s", "--group-rate-for", "slow=1/1h")
	if out := admin.ok(t, "client", "show", "tina"); !strings.Contains(out, "5 per 1s") || !strings.Contains(out, "slow: 1 per 1h") {
		t.Fatalf("client show with rate limits:\n%s", out)
	}
	tina.ok(t, "set", "x", "--group", "slow", "--delay", "1h")
	if out := tina.ok(t, "group", "show", "slow"); !strings.Contains(out, "Rate limit:") || !strings.Contains(out, "1 per 1h") {
		t.Fatalf("group show with a rate limit:\n%s", out)
	}
	tina.ok(t, "delete-all", "--group", "slow")
	code, _, errOut = admin.run("", "client", "update", "tina", "--group-rate", "5")
	if code != 2 || !strings.Contains(errOut, "want N/DURATION") {
		t.Fatalf("bad --group-rate: exit %d, %q", code, errOut)
	}
	code, _, errOut = tina.run("", "set", "x", "--debounce", "1s")
	if code != 2 || !strings.Contains(errOut, "--debounce needs --replace") {
		t.Fatalf("--debounce alone: exit %d, %q", code, errOut)
	}
	code, _, errOut = tina.run("", "set", "x", "--cron", "0 9 * * *", "--tz", "Nowhere/Land")
	if code != 1 || !strings.Contains(errOut, "time zone") {
		t.Fatalf("unknown time zone: exit %d, %q", code, errOut)
	}
	code, _, errOut = tina.run("", "set", "x", "--every", "-1s")
	if code != 2 || !strings.Contains(errOut, "must not be negative") {
		t.Fatalf("negative interval: exit %d, %q", code, errOut)
	}
	admin.ok(t, "client", "deregister", "tina")
}

// The panel's views from the command line, against a real server.
func TestPanelCommands(t *testing.T) {
	addr := startServer(t)
	admin := newTool(t)
	admin.now = time.Now()
	admin.ok(t, "login", "--addr", addr, "--client", "admin", "--password", adminPassword)
	reg := admin.json(t, "client", "register", "pat", "--callback", "udp://127.0.0.1:9")
	pat := newTool(t)
	pat.now = time.Now()
	pat.env[EnvAddr], pat.env[EnvClient], pat.env[EnvPassword] = addr, "pat", reg["generatedPassword"].(string)
	out := pat.ok(t, "set", "x", "--delay", "1h", "--group", "orders")
	id := strings.TrimSuffix(strings.Fields(out)[2], ",")
	pat.ok(t, "set", "y", "--delay", "1h", "--group", "mail")

	if out := pat.ok(t, "group", "list"); !strings.Contains(out, "orders") || !strings.Contains(out, "mail") {
		t.Fatalf("group list:\n%s", out)
	}
	if out := pat.ok(t, "group", "list", "--blocked"); !strings.Contains(out, "No groups.") {
		t.Fatalf("group list --blocked:\n%s", out)
	}
	if out := pat.ok(t, "attempts", id); !strings.Contains(out, "No attempts remembered.") {
		t.Fatalf("attempts:\n%s", out)
	}
	if out := pat.ok(t, "completed"); !strings.Contains(out, "Nothing completed in the window.") {
		t.Fatalf("completed:\n%s", out)
	}
	if out := pat.ok(t, "dlq", "replay-all", "--error", "HTTP 503", "--dry-run"); !strings.Contains(out, "Would replay 0 matching dead letters.") {
		t.Fatalf("dlq replay-all --dry-run:\n%s", out)
	}
	pat.ok(t, "delete-all", "--group", "mail")
	out = admin.ok(t, "audit")
	if !strings.Contains(out, "CancelTasks") || !strings.Contains(out, "group mail") || !strings.Contains(out, "RegisterClient") {
		t.Fatalf("audit:\n%s", out)
	}
	if out := pat.ok(t, "audit"); !strings.Contains(out, "CancelTasks") {
		t.Fatalf("pat's audit lacks its own action:\n%s", out)
	}
}

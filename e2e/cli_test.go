package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cli runs the boomtool binary with its own config directory.
type cli struct {
	t    *testing.T
	addr string
	home string
	env  []string
}

func newCLI(t *testing.T, addr string) *cli {
	home := t.TempDir()
	return &cli{t: t, addr: addr, home: home, env: []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH"),
	}}
}

// run returns the exit code, standard output and standard error.
func (c *cli) run(stdin string, args ...string) (int, string, string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "boomtool"), append(args, "--addr", c.addr)...)
	cmd.Env = c.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		<-done
		c.t.Fatalf("boomtool %v did not finish", args)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// ok runs a command that must succeed and returns its output.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run("", args...)
	if code != 0 {
		c.t.Fatalf("boomtool %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// json runs a command with -o json and decodes its output.
func (c *cli) json(args ...string) map[string]any {
	c.t.Helper()
	out := c.ok(append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		c.t.Fatalf("boomtool %v -o json printed %q: %v", args, out, err)
	}
	return m
}

// fails runs a command that must fail with code and a message containing
// want.
func (c *cli) fails(code int, want string, args ...string) {
	c.t.Helper()
	got, out, errOut := c.run("", args...)
	if got != code || !strings.Contains(errOut, want) {
		c.t.Fatalf("boomtool %v: exit %d, stderr %q (stdout %q); want exit %d mentioning %q", args, got, errOut, out, code, want)
	}
}

// Every boomtool command against the real server, in table and JSON form.
func TestBoomtool(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	recv := startReceiver(t, true)
	c := newCLI(t, s.tcp)

	c.fails(1, "unauthorized", "login", "--client", "nobody", "--password", "wrong-password")
	c.fails(1, "not logged in", "list")
	out := c.ok("login", "--client", "admin", "--password", adminPassword)
	if !strings.Contains(out, "Logged in to "+s.tcp+" as admin (admin)") {
		t.Fatalf("login printed %q", out)
	}
	st, err := os.Stat(filepath.Join(c.home, ".config", "boomerang", "session.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("session file: %v, %v", st, err)
	}

	// Client administration with the saved admin session.
	reg := c.json("client", "register", "erin", "--new-password", "erin-password", "--callback", recv.url(),
		"--max-attempts", "1", "--mode", "block-on-error")
	if reg["client"].(map[string]any)["id"] != "erin" || reg["signingSecret"] == "" {
		t.Fatalf("client register -o json = %v", reg)
	}
	out = c.ok("client", "register", "frank", "--callback", "udp://127.0.0.1:9")
	if !strings.Contains(out, "Registered client frank.") || !strings.Contains(out, "(generated; shown only now)") {
		t.Fatalf("client register printed %q", out)
	}
	out = c.ok("client", "list")
	for _, want := range []string{"ID", "admin", "erin", "frank", "udp://127.0.0.1:9"} {
		if !strings.Contains(out, want) {
			t.Fatalf("client list lacks %q:\n%s", want, out)
		}
	}
	if list := c.json("client", "list"); len(list["clients"].([]any)) != 3 {
		t.Fatalf("client list -o json = %v", list)
	}
	c.ok("client", "deregister", "frank")
	c.fails(1, "not found", "client", "deregister", "frank")

	// Tasks as erin, with credentials from the environment.
	e := newCLI(t, s.tcp)
	e.env = append(e.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	out = e.ok("set", "invoice 42", "--delay", "90s", "--group", "customer-7")
	if !strings.HasPrefix(out, "Scheduled task ") || !strings.Contains(out, "(in 1m30s)") && !strings.Contains(out, "(in 1m29s)") {
		t.Fatalf("set printed %q", out)
	}
	set := e.json("set", "--empty", "--payload-file", "-", "--at", time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339), "--every", "5m", "--key", "k-1")
	task := set["task"].(map[string]any)
	id := task["id"].(string) // 64-bit integers are strings in protobuf JSON
	if set["created"] != true || task["repeatIntervalMs"] != "300000" {
		t.Fatalf("set -o json = %v", set)
	}
	if again := e.json("set", "other", "--key", "k-1"); again["created"] == true {
		t.Fatalf("a repeated idempotency key created a task: %v", again)
	}
	out = e.ok("show", id)
	for _, want := range []string{"ID:", id, "every 5m", "Status:", "scheduled", "Idempotency key: k-1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	out = e.ok("update", id, "--payload", "changed", "--every", "1h")
	if !strings.Contains(out, "every 1h") {
		t.Fatalf("update printed %q", out)
	}
	if shown := e.json("show", id); shown["task"].(map[string]any)["payload"] != "Y2hhbmdlZA==" { // base64 of "changed"
		t.Fatalf("show -o json after update = %v", shown)
	}
	out = e.ok("list")
	if !strings.Contains(out, `"invoice 42"`) || !strings.Contains(out, "customer-7") || !strings.Contains(out, `"changed"`) {
		t.Fatalf("list:\n%s", out)
	}
	if l := e.json("list", "--recurring"); len(l["tasks"].([]any)) != 1 {
		t.Fatalf("list --recurring -o json = %v", l)
	}
	out = e.ok("list", "--limit", "1", "--sort", "id")
	if !strings.Contains(out, "More tasks: add --page-token") {
		t.Fatalf("list --limit 1 --sort id:\n%s", out)
	}
	out = e.ok("list", "--limit", "1")
	if !strings.Contains(out, `"invoice 42"`) || !strings.Contains(out, "1 more task: raise --limit, or use --all.") {
		t.Fatalf("list --limit 1 (due order: the invoice first):\n%s", out)
	}
	e.ok("delete", id)
	e.fails(1, "not found", "show", id)
	e.fails(1, "not found", "delete", id)
	e.fails(2, "must not be negative", "set", "x", "--every", "-5m")
	e.fails(1, "unauthorized", "client", "list")

	// A task due now fails (the receiver refuses it) and is
	// dead-lettered; replayed, it fails again.
	e.ok("set", "doomed")
	dlqID := awaitDeadLetterCLI(t, e, "ZG9vbWVk") // base64 of "doomed"
	out = e.ok("dlq", "list")
	if !strings.Contains(out, "LAST ERROR") || !strings.Contains(out, dlqID) {
		t.Fatalf("dlq list:\n%s", out)
	}
	if out = e.ok("dlq", "show", dlqID); !strings.Contains(out, `"doomed"`) || !strings.Contains(out, "Blocks group: false") {
		t.Fatalf("dlq show:\n%s", out)
	}
	if out = e.ok("dlq", "replay", dlqID); !strings.Contains(out, "Replaying dead letter "+dlqID) {
		t.Fatalf("dlq replay printed %q", out)
	}
	e.fails(1, "not found", "dlq", "show", dlqID)
	again := awaitDeadLetterCLI(t, e, "ZG9vbWVk")
	e.ok("dlq", "delete", again)
	e.fails(1, "not found", "dlq", "delete", again)

	// In a group, in block-on-error mode, the failure blocks the group
	// until it is unblocked.
	e.ok("set", "poison", "--group", "gq")
	waitFor(t, "group gq to block", func() bool {
		g := e.json("group", "show", "gq")["group"].(map[string]any)
		return g["blocked"] == true
	})
	if out = e.ok("group", "show", "gq"); !strings.Contains(out, "Blocked by dead letter:") {
		t.Fatalf("group show:\n%s", out)
	}
	recv.fail.Store(false)
	if out = e.ok("group", "unblock", "gq"); !strings.Contains(out, "Unblocked group gq") {
		t.Fatalf("group unblock printed %q", out)
	}
	waitFor(t, "group gq to go on", func() bool {
		code, out, _ := e.run("", "group", "show", "gq", "-o", "json")
		return code != 0 || !strings.Contains(out, `"blocked": true`)
	})
	e.fails(1, "", "group", "skip", "gq")

	// Errors of the command line itself.
	e.fails(2, "bad task id", "show", "x")
	e.fails(2, "unknown flag", "list", "--nope")
	if code, out, _ := e.run("", "completion", "bash"); code != 0 || !strings.Contains(out, "boomtool") {
		t.Fatalf("completion bash: exit %d", code)
	}
	info := e.json("info")
	if info["tcpAddress"] == "" || info["version"] == "" {
		t.Fatalf("info -o json = %v", info)
	}
	c.ok("logout")
	c.fails(1, "not logged in", "list")
}

// boomtool bench against the real server.
func TestBench(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	registerClient(t, s.admin(t), "bencher", "http://127.0.0.1:1/unused", 0)
	c := newCLI(t, s.tcp)
	rep := c.json("bench", "--client", "bencher", "--password", "bencher-password", "--count", "3000", "--conns", "2", "--depth", "64")
	for _, k := range []string{"throughput_per_s", "p50_us", "p99_us", "p999_us", "max_us", "elapsed_s"} {
		if v, ok := rep[k].(float64); !ok || v <= 0 {
			t.Errorf("bench report %s = %v", k, rep[k])
		}
	}
	if rep["acked"] != 3000.0 || rep["errors"] != nil {
		t.Fatalf("bench report %v", rep)
	}
	out := c.ok("bench", "--client", "bencher", "--password", "bencher-password", "--duration", "300ms", "--conns", "1", "--depth", "8")
	if !strings.Contains(out, "registrations/s") || !strings.Contains(out, "p99.9") {
		t.Fatalf("bench printed %q", out)
	}
	batch := c.json("bench", "--client", "bencher", "--password", "bencher-password", "--count", "3000", "--conns", "2", "--depth", "4", "--batch", "100")
	if batch["acked"] != 3000.0 || batch["batch"] != 100.0 || batch["errors"] != nil {
		t.Fatalf("bench --batch report %v", batch)
	}
	c.fails(2, "--batch", "bench", "--client", "bencher", "--password", "bencher-password", "--batch", "1001")
}

// awaitDeadLetterCLI waits until dlq list shows a dead letter whose task
// has the payload (base64) and returns its id.
func awaitDeadLetterCLI(t *testing.T, c *cli, payload64 string) string {
	t.Helper()
	var id string
	waitFor(t, "a dead letter", func() bool {
		l := c.json("dlq", "list")
		dls, _ := l["deadLetters"].([]any)
		for _, d := range dls {
			m := d.(map[string]any)
			if m["task"].(map[string]any)["payload"] == payload64 {
				id = m["id"].(string)
				return true
			}
		}
		return false
	})
	return id
}

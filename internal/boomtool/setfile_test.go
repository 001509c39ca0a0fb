package boomtool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loader is a client "lena" that may schedule tasks on a fresh server.
func loader(t *testing.T) *tool {
	t.Helper()
	addr := startServer(t)
	admin := newTool(t)
	admin.env[EnvAddr], admin.env[EnvClient], admin.env[EnvPassword] = addr, "admin", adminPassword
	pw, _ := admin.json(t, "client", "register", "lena", "--callback", "udp://127.0.0.1:9")["generatedPassword"].(string)
	lena := newTool(t)
	lena.now = time.Now()
	lena.env[EnvAddr], lena.env[EnvClient], lena.env[EnvPassword] = addr, "lena", pw
	return lena
}

const taskFile = `{"payload": "invoice 42", "delay": "90s", "group": "customer-7"}
{"payload-base64": "AAEC/w==", "at": "2031-01-01T00:00:00Z", "key": "k-1"}

{"empty": true, "every": "1ms", "group": "heartbeat"}
{"payload": "again", "key": "k-1", "delay": "1h"}
{"payload": "ping", "every": "1h", "delay": "1h", "mode": "immediate", "max-attempts": 3, "callback": "udp://127.0.0.1:9", "callback-timeout": "2s"}
{"payload": "report", "cron": "0 9 * * MON-FRI", "tz": "Europe/Zurich"}
{"payload": "v1", "replace": "reindex", "debounce": "1h"}
{"payload": "v2", "replace": "reindex", "debounce": "1h", "max-wait": "2h"}
`

// Every line's task is scheduled on its own; a task the server refuses
// fails alone, and makes the command fail.
func TestSetFromFile(t *testing.T) {
	lena := loader(t)
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, []byte(taskFile), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := lena.run("", "set", "--file", path)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 1 || !strings.Contains(errOut, "1 of 8 tasks failed") || len(lines) != 8 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	for i, want := range []string{
		"line 1: Scheduled task ", "line 2: Scheduled task ", "line 4: invalid repeat_interval_ms",
		`line 5: Task `, "line 6: Scheduled task ", "line 7: Scheduled task ", "line 8: Scheduled task ",
		`line 9: Replaced waiting task `,
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("result %d: %q, want it to start with %q", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[3], `already exists with idempotency key "k-1"`) {
		t.Errorf("the repeated key: %q", lines[3])
	}
	id := strings.TrimSuffix(strings.Fields(lines[1])[4], ",")
	if show := lena.ok(t, "show", id); !strings.Contains(show, "4 bytes 0x000102ff") || !strings.Contains(show, "2031-01-01T00:00:00Z") {
		t.Fatalf("the binary task:\n%s", show)
	}
	if show := lena.ok(t, "show", strings.TrimSuffix(strings.Fields(lines[4])[4], ",")); !strings.Contains(show, "udp://127.0.0.1:9") ||
		!strings.Contains(show, "immediate") || !strings.Contains(show, "3 attempts") {
		t.Fatalf("the task with every field:\n%s", show)
	}
}

// -o json prints one RegisterTaskResult per line, with its line number;
// "-" reads standard input.
func TestSetFromStdinJSON(t *testing.T) {
	lena := loader(t)
	code, out, errOut := lena.run(`{"payload": "a"}`+"\n"+`{"payload": "b", "every": "1ms"}`, "set", "--file", "-", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var results []map[string]any
	for l := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		results = append(results, m)
	}
	if len(results) != 2 || results[0]["line"] != 1.0 || results[0]["registered"] == nil || results[1]["line"] != 2.0 {
		t.Fatalf("results %v", results)
	}
	if e, _ := results[1]["error"].(map[string]any); e["status"] != "STATUS_INVALID_REQUEST" || e["field"] != "repeat_interval_ms" {
		t.Fatalf("the refused task: %v", results[1])
	}
}

// A malformed line, or flags beside --file, schedule nothing: exit 2.
func TestSetFromFileUsageErrors(t *testing.T) {
	lena := loader(t)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"{\"payload\": \"ok\"}\n{\"payload\": \"x\", \"delay\": \"soon\"}\n", nil, `standard input line 2: bad duration "soon"`},
		{`{"payload": "x", "colour": "red"}`, nil, `line 1: not a task object: unknown field "colour"`},
		{`{"delay": "1h"}`, nil, `line 1: no payload: give it as "payload" or "payload-base64", or pass "empty": true`},
		{`{"payload": "x", "payload-base64": "eA=="}`, nil, `not both`},
		{`{"payload": "x", "delay": "1h", "at": "2031-01-01T00:00:00Z"}`, nil, `give "delay" or "at", not both`},
		{`["x"]`, nil, "line 1: not a task object"},
		{`{"payload": "x"}`, []string{"--group", "g"}, "--file takes every field from the file: drop --group"},
		{`{"payload": "x"}`, []string{"payload"}, `drop the argument "payload"`},
	} {
		code, _, errOut := lena.run(tc.stdin, append([]string{"set", "--file", "-"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q %v: exit %d, %q; want 2, %q", tc.stdin, tc.args, code, errOut, tc.want)
		}
	}
	if out := lena.ok(t, "list"); !strings.Contains(out, "No tasks.") {
		t.Fatalf("a refused file scheduled:\n%s", out)
	}
	if code, out, _ := lena.run("", "set", "--file", "-"); code != 0 || out != "" {
		t.Fatalf("an empty file: exit %d, %q", code, out)
	}
}

package e2e

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// What clients put in group keys and payloads cannot act on an admin's
// terminal; JSON output stays exact.
func TestCLIEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	registerClient(t, s.admin(t), "erin", "http://127.0.0.1:1/hook", 0)
	e := newCLI(t, s.tcp)
	e.env = append(e.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	group := "g\x1b[2J\x1b]0;owned\x07\ttab\nline"
	id := e.json("set", "p\x1b[31mred", "--group", group, "--delay", "1h")["task"].(map[string]any)["id"].(string)
	for _, args := range [][]string{{"list"}, {"show", id}, {"group", "show", group}} {
		out := e.ok(args...)
		if strings.ContainsAny(out, "\x1b\x07\t") || !strings.Contains(out, `g\x1b[2J\x1b]0;owned\a\ttab\nline`) {
			t.Errorf("%v printed %q", args, out)
		}
	}
	if got := e.json("show", id)["task"].(map[string]any)["group"]; got != group {
		t.Fatalf("show -o json group %q, want %q", got, group)
	}
}

// Usage mistakes exit 2, as docs/cli.md says; an empty payload needs
// --empty.
func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	registerClient(t, s.admin(t), "erin", "http://127.0.0.1:1/hook", 0)
	e := newCLI(t, s.tcp)
	e.env = append(e.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	for _, c := range []struct {
		want string
		args []string
	}{
		{`unknown command "lst" for "boomtool dlq"; did you mean list?`, []string{"dlq", "lst"}},
		{`unknown command "regster" for "boomtool client"; did you mean register?`, []string{"client", "regster"}},
		{`unknown command "lst" for "boomtool"`, []string{"lst"}},
		{"no payload", []string{"set"}},
		{"the payload is empty: pass --empty", []string{"set", ""}},
		{"bad duration", []string{"set", "x", "--delay", "5x"}},
		{"must not be negative", []string{"set", "x", "--delay", "-5s"}},
		{"--timeout must be positive", []string{"info", "--timeout", "0s"}},
		{"bad --sort", []string{"list", "--sort", "priority"}},
	} {
		e.fails(2, c.want, c.args...)
	}
	if out := e.ok("set", "--empty", "--delay", "1h"); !strings.HasPrefix(out, "Scheduled task") {
		t.Fatalf("set --empty printed %q", out)
	}
	if code, out, _ := e.run("", "dlq"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Fatalf("dlq alone: exit %d, %q", code, out)
	}
}

// list is in due order by default, and next shows what fires next.
func TestCLIListOrder(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	recv := startReceiver(t, false)
	registerClient(t, s.admin(t), "erin", recv.url(), 0)
	e := newCLI(t, s.tcp)
	e.env = append(e.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	ids := make(map[string]uint64)
	for _, p := range []string{"third 3h", "first 1h", "second 2h"} {
		id := e.json("set", p, "--delay", strings.Fields(p)[1])["task"].(map[string]any)["id"].(string)
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			t.Fatalf("set %s: id %q: %v", p, id, err)
		}
		ids[strings.Fields(p)[0]] = n
	}
	// Ids are in order within a shard only; the tasks may be on any.
	byID := []string{"third", "first", "second"}
	slices.SortFunc(byID, func(a, b string) int { return cmp.Compare(ids[a], ids[b]) })
	order := func(out string, names ...string) bool {
		last := -1
		for _, n := range names {
			i := strings.Index(out, n)
			if i < last {
				return false
			}
			last = i
		}
		return last >= 0
	}
	if out := e.ok("list"); !order(out, "first", "second", "third") {
		t.Fatalf("list:\n%s", out)
	}
	if out := e.ok("list", "--sort", "id"); !order(out, byID...) {
		t.Fatalf("list --sort id:\n%s", out)
	}
	if out := e.ok("list", "--sort", "created"); !order(out, "third", "first", "second") {
		t.Fatalf("list --sort created:\n%s", out)
	}
	if out := e.ok("next", "--limit", "1"); !strings.Contains(out, "first") || strings.Contains(out, "second") ||
		!strings.Contains(out, "2 more tasks") {
		t.Fatalf("next --limit 1:\n%s", out)
	}
	// A recurring task due now fires once, then waits an hour.
	id := e.json("set", "tick", "--every", "1h")["task"].(map[string]any)["id"].(string)
	recv.next(t)
	waitFor(t, "the firing to be counted", func() bool {
		return e.json("show", id)["task"].(map[string]any)["fires"] == "1"
	})
	if out := e.ok("show", id); !strings.Contains(squash(out), "Fired: 1 time\n") {
		t.Fatalf("show:\n%s", out)
	}
}

// A due task behind a blocking dead letter says so in list and show; a
// replay of the blocking head unblocks the group and keeps the head's
// due time.
func TestCLIBlockedGroup(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	recv := startReceiver(t, true)
	registerClient(t, s.admin(t), "erin", recv.url(), boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR)
	e := newCLI(t, s.tcp)
	e.env = append(e.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	e.ok("set", "poison", "--group", "gq")
	var head map[string]any
	waitFor(t, "the group to block", func() bool {
		dls, _ := e.json("dlq", "list")["deadLetters"].([]any)
		if len(dls) == 1 {
			head = dls[0].(map[string]any)
		}
		return head != nil
	})
	dlID := head["id"].(string)
	behind := e.json("set", "behind", "--group", "gq")["task"].(map[string]any)["id"].(string)
	want := "blocked by dead letter " + dlID
	waitFor(t, "list to show the task blocked", func() bool { return strings.Contains(e.ok("list"), want) })
	if out := e.ok("show", behind); !strings.Contains(squash(out), "Status: "+want) {
		t.Fatalf("show:\n%s", out)
	}
	if got := e.json("show", behind)["task"].(map[string]any); got["status"] != "TASK_STATUS_BLOCKED" || got["blockedByDeadLetter"] != dlID {
		t.Fatalf("show -o json: %v", got)
	}
	recv.fail.Store(false)
	replayed := e.json("dlq", "replay", dlID)["task"].(map[string]any)
	if due := head["task"].(map[string]any)["fireAtMs"]; replayed["fireAtMs"] != due {
		t.Fatalf("the replayed head is due %v, was %v", replayed["fireAtMs"], due)
	}
	waitFor(t, "the group to drain", func() bool { return strings.Contains(e.ok("list"), "No tasks.") })
	// A group with no tasks that is not blocked is forgotten.
	e.fails(1, "not found", "group", "show", "gq")
}

// squash collapses runs of spaces, so that checks do not depend on how
// columns are aligned.
func squash(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

// Messages about bad names say what is wrong in words, whatever bytes
// the name holds.
func TestNameMessages(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := newCLI(t, s.tcp)
	admin.fails(1, `invalid client_id: must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-'; found 'ü' (U+00FC) at byte 0`,
		"client", "register", "ünï", "--client", "admin", "--password", adminPassword)
	c := s.admin(t)
	_, err := c.RegisterTask(testContext(t), &boomerangv1.RegisterTaskRequest{Payload: []byte("x"), Group: "a\x00b"})
	if err == nil || !strings.Contains(err.Error(), "invalid group: must not contain NUL, found one at byte 1") {
		t.Fatalf("a group with NUL: %v", err)
	}
}

// set --file schedules a file's tasks, from a file or standard input,
// one result per line, and fails (exit 1) when any task failed.
func TestCLISetFromFile(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	registerClient(t, s.admin(t), "erin", "http://127.0.0.1:1/hook", 0)
	e := newCLI(t, s.tcp)
	e.env = append(e.env, "BOOMERANG_CLIENT=erin", "BOOMERANG_PASSWORD=erin-password")
	var lines strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&lines, `{"payload": "task %d", "delay": "1h", "group": "g%d"}`+"\n", i, i%3)
	}
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := e.ok("set", "--file", path)
	if n := strings.Count(out, ": Scheduled task "); n != 2500 || !strings.HasPrefix(out, "line 1: ") || !strings.Contains(out, "\nline 2500: ") {
		t.Fatalf("%d tasks scheduled; output starts %q", n, out[:min(len(out), 200)])
	}
	code, out, errOut := e.run(`{"payload": "fine"}`+"\n"+`{"payload": "too often", "every": "1ms"}`+"\n", "set", "--file", "-")
	if code != 1 || !strings.HasPrefix(out, "line 1: Scheduled task") || !strings.Contains(out, "line 2: invalid repeat_interval_ms") ||
		!strings.Contains(errOut, "1 of 2 tasks failed") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	e.fails(1, "no such file", "set", "--file", path+".missing")
}

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// quickStart is every command of the README's quick start, in its order;
// TestQuickStart checks that the README says exactly this, then runs it.
var quickStart = []string{
	"BOOMERANG_ADMIN_PASSWORD=admin-secret-1 go run ./cmd/boomerang",
	"go run ./examples/receiver -secret quickstart-secret",
	"go build -o . ./cmd/boomtool",
	"BOOMERANG_CLIENT=admin BOOMERANG_PASSWORD=admin-secret-1 ./boomtool client register quick --new-password quick-password --callback http://127.0.0.1:8080/hook --signing-secret quickstart-secret",
	"export BOOMERANG_CLIENT=quick BOOMERANG_PASSWORD=quick-password",
	"./boomtool set 'hello, boomerang' --delay 5s --group demo",
	"./boomtool list",
}

// The README's quick start, run as written and in its order, in a fresh
// directory: the server with its default data directory, the example
// receiver, a client registered with boomtool, a task scheduled and
// listed, and the task coming back to the receiver. Only the fixed ports
// are replaced by free ones.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	if got := readmeCommands(t); strings.Join(got, "\n") != strings.Join(quickStart, "\n") {
		t.Fatalf("the README's quick start is\n%s\nbut this test runs\n%s", strings.Join(got, "\n"), strings.Join(quickStart, "\n"))
	}
	dir := t.TempDir()
	var s *server
	var hook string
	var lines <-chan string
	var c *cli
	exported := []string{}
	for _, line := range quickStart {
		env, words := shellWords(t, line)
		switch {
		case words[0] == "go" && words[1] == "run":
			if words[2] == "./cmd/boomerang" {
				cmd := exec.Command(filepath.Join(binDir, "boomerang"), "--tcp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0")
				cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
				s = launch(t, cmd, filepath.Join(dir, "boomerang-data"))
				c = newCLI(t, s.tcp)
			} else {
				hook, lines = startExampleReceiver(t, words[len(words)-1])
			}
		case words[0] == "go" && words[1] == "build":
			// boomtool is built already.
		case words[0] == "export":
			exported = append(exported, words[1:]...)
		default: // ./boomtool
			if words[1] == "client" {
				words[slicesIndex(words, "http://127.0.0.1:8080/hook")] = hook
			}
			run := *c
			run.env = append(append(append([]string{}, c.env...), exported...), env...)
			out := run.ok(words[1:]...)
			if words[1] == "list" && (!strings.Contains(out, `"hello, boomerang"`) || !strings.Contains(out, "scheduled")) {
				t.Fatalf("list printed:\n%s", out)
			}
		}
	}
	deadline := time.After(waitLimit)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the receiver exited")
			}
			// The server leads every shard in term 1 or later.
			if deliveredLine.MatchString(line) {
				return
			}
			t.Logf("receiver: %s", line)
		case <-deadline:
			t.Fatal("the task never reached the receiver")
		}
	}
}

// deliveredLine is what the example receiver prints for the quick
// start's task.
var deliveredLine = regexp.MustCompile(`attempt 1 group demo term [1-9][0-9]* due .*: "hello, boomerang"$`)

func slicesIndex(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	panic("no " + w)
}

// readmeCommands returns the commands of the README's quick start.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	return docCommands(t, "../README.md", "## Quick start")
}

// docCommands returns the commands of a section of a Markdown file: the
// lines of its sh blocks, continuation lines joined, comments dropped.
func docCommands(t *testing.T, path, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(b), heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no section %q", path, heading)
	}
	section := string(b)[start:] + "\n## "
	section = section[:strings.Index(section[3:], "\n## ")+3]
	var cmds []string
	inSh, pending := false, ""
	for line := range strings.SplitSeq(section, "\n") {
		switch {
		case line == "```sh":
			inSh = true
		case strings.HasPrefix(line, "```"):
			inSh = false
		case inSh:
			if i := strings.Index(line, "  #"); i >= 0 {
				line = line[:i]
			}
			line = strings.TrimSpace(line)
			if cont, ok := strings.CutSuffix(line, `\`); ok {
				pending += cont
				continue
			}
			if line = strings.Join(strings.Fields(pending+line), " "); line != "" {
				cmds = append(cmds, line)
			}
			pending = ""
		}
	}
	return cmds
}

// shellWords splits a command line as sh would for these commands:
// leading NAME=value words are its environment, single quotes group.
func shellWords(t *testing.T, line string) (env, words []string) {
	t.Helper()
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line + " " {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		env, words = append(env, words[0]), words[1:]
	}
	return env, words
}

// startExampleReceiver runs examples/receiver on a free port and returns
// its webhook URL and its standard output, a line at a time.
func startExampleReceiver(t *testing.T, secret string) (string, <-chan string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "receiver"), "-listen", "127.0.0.1:0", "-secret", secret)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range lines { // until the pipe closes
		}
		_ = cmd.Wait()
	})
	select {
	case first, ok := <-lines:
		url, found := strings.CutPrefix(first, "receiving on ")
		if !ok || !found {
			t.Fatalf("receiver started with %q", first)
		}
		return url, lines
	case <-time.After(waitLimit):
		t.Fatal("the receiver did not start")
		return "", nil
	}
}

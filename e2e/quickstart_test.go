package e2e

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's quick start, step by step: a server, the example receiver,
// a client registered with boomtool, a task scheduled and listed, and the
// task coming back to the receiver.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	hook, lines := startExampleReceiver(t, "quickstart-secret")
	c := newCLI(t, s.tcp)

	c.ok("client", "register", "quick", "--new-password", "quick-password", "--callback", hook,
		"--signing-secret", "quickstart-secret", "--client", "admin", "--password", adminPassword)
	as := []string{"--client", "quick", "--password", "quick-password"}
	c.ok(append([]string{"set", "hello, boomerang", "--delay", "1s", "--group", "demo"}, as...)...)
	if out := c.ok(append([]string{"list"}, as...)...); !strings.Contains(out, `"hello, boomerang"`) || !strings.Contains(out, "scheduled") {
		t.Fatalf("list printed:\n%s", out)
	}

	deadline := time.After(waitLimit)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the receiver exited")
			}
			if strings.Contains(line, "attempt 1 group demo") && strings.HasSuffix(line, `"hello, boomerang"`) {
				return
			}
			t.Logf("receiver: %s", line)
		case <-deadline:
			t.Fatal("the task never reached the receiver")
		}
	}
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

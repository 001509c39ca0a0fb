package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/client"
	"github.com/go-logfmt/logfmt"
)

const (
	waitLimit     = 60 * time.Second
	adminPassword = "admin-password-e2e"
)

// server is a running boomerang process.
type server struct {
	t       *testing.T
	dataDir string
	cmd     *exec.Cmd
	tcp     string
	http    string
	metrics string                 // the metrics listener's address, if any
	startup []map[string]string    // log lines up to the listening line
	lines   chan map[string]string // parsed stderr lines; closed at exit
	exited  chan struct{}
	waitErr error
}

// newDataDir returns a data directory for a server to create: the server
// refuses one its group or others may read, as t.TempDir's are.
func newDataDir(t *testing.T) string { return filepath.Join(t.TempDir(), "data") }

// startServer runs boomerang on free ports with dataDir ("" = a new temp
// dir) and extra flags.
func startServer(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	return startServerEnv(t, dataDir, nil, extra...)
}

// startServerEnv is startServer with variables added to the environment.
func startServerEnv(t *testing.T, dataDir string, env []string, extra ...string) *server {
	t.Helper()
	if dataDir == "" {
		dataDir = newDataDir(t)
	}
	return launch(t, serverCommand(dataDir, env, extra...), dataDir)
}

// launch starts cmd, a boomerang server on dataDir, and waits until it
// listens.
func launch(t *testing.T, cmd *exec.Cmd, dataDir string) *server {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, dataDir: dataDir, cmd: cmd, lines: make(chan map[string]string, 1024), exited: make(chan struct{})}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(s.lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			kv := parseLogLine(sc.Text())
			kv["_line"] = sc.Text()
			select {
			case s.lines <- kv:
			default: // nobody is watching; drop
			}
		}
	}()
	go func() {
		<-readerDone
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.kill() })
	s.awaitAddresses()
	return s
}

// serverCommand is the boomerang command line startServerEnv runs.
func serverCommand(dataDir string, env []string, extra ...string) *exec.Cmd {
	args := append([]string{"serve", "--data-dir", dataDir, "--tcp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--admin-password", adminPassword}, extra...)
	cmd := exec.Command(filepath.Join(binDir, "boomerang"), args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// failStart runs boomerang as startServerEnv would, expecting it to exit
// with an error at start; it returns the standard error.
func failStart(t *testing.T, dataDir string, env []string, extra ...string) string {
	t.Helper()
	cmd := serverCommand(dataDir, env, extra...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("boomerang did not exit:\n%s", out)
	}
	if err == nil {
		t.Fatalf("boomerang started and exited cleanly:\n%s", out)
	}
	return string(out)
}

// awaitAddresses reads the log until both listening addresses are known.
func (s *server) awaitAddresses() {
	s.t.Helper()
	timeout := time.After(waitLimit)
	var seen []string
	for s.tcp == "" || s.http == "" {
		select {
		case kv, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("boomerang exited before listening:\n%s", strings.Join(seen, "\n"))
			}
			seen = append(seen, kv["_line"])
			s.startup = append(s.startup, kv)
			s.noteAddresses(kv)
		case <-timeout:
			s.t.Fatalf("boomerang did not report its addresses:\n%s", strings.Join(seen, "\n"))
		}
	}
}

// noteAddresses picks listening addresses out of a log line.
func (s *server) noteAddresses(kv map[string]string) {
	for k, v := range kv {
		switch k {
		case "tcp", "tcp_addr", "tcp_address":
			s.tcp = v
		case "http", "http_addr", "http_address":
			s.http = v
		case "metrics":
			s.metrics = v
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop sends SIGTERM and returns the exit error.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return s.waitErr
	case <-time.After(waitLimit):
		s.kill()
		return errors.New("boomerang did not stop within the wait limit")
	}
}

// dial connects the SDK with credentials.
func (s *server) dial(t *testing.T, id, password string, opts ...client.Option) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := client.Dial(ctx, s.tcp, client.Credentials{ClientID: id, Password: password}, opts...)
	if err != nil {
		t.Fatalf("Dial %s as %s: %v", s.tcp, id, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *server) admin(t *testing.T) *client.Client { return s.dial(t, "admin", adminPassword) }

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// parseLogLine splits a log/slog text line into its keys and values.
func parseLogLine(line string) map[string]string {
	kv := map[string]string{}
	d := logfmt.NewDecoder(strings.NewReader(line))
	for d.ScanRecord() {
		for d.ScanKeyval() {
			kv[string(d.Key())] = string(d.Value())
		}
	}
	return kv
}

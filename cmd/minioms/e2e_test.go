package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logfmt/logfmt"
	"go.uber.org/goleak"

	"github.com/boomerangd/boomerang/internal/oms"
	boomerang "github.com/boomerangd/boomerang/internal/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 60 * time.Second

// TestEndToEnd builds the real binaries, starts minioms on a free port,
// runs omsload against it, then stops the server with SIGTERM while
// omsload is still sending, and checks that every order the server read
// was answered and reached omsload.
func TestEndToEnd(t *testing.T) {
	bin := buildBinaries(t)
	srv := startMinioms(t, bin, "-exec-min", "1ms", "-exec-max", "2ms", "-stats-interval", "50ms")

	out := runOmsload(t, bin, "-addr", srv.addr, "-scenario", "mixed", "-orders", "3000", "-conns", "2", "-json")
	for _, key := range []string{"sent", "responses", "acks", "rejects", "busy", "fifo_violations", "duplicate_responses",
		"missing_responses", "throughput_per_s", "p50_us", "p99_us", "p999_us", "max_us"} {
		if _, ok := out[key]; !ok {
			t.Errorf("omsload -json lacks %q: %v", key, out)
		}
	}
	if out["sent"] != 3000.0 || out["responses"] != 3000.0 || out["fifo_violations"] != 0.0 ||
		out["duplicate_responses"] != 0.0 || out["missing_responses"] != 0.0 || out["wrong_decisions"] != 0.0 {
		t.Fatalf("mixed run not clean: %v", out)
	}

	// Shutdown under load.
	load := exec.Command(filepath.Join(bin, "omsload"), "-addr", srv.addr, "-scenario", "many-families",
		"-rate", "5000", "-duration", "1m", "-json")
	var loadOut bytes.Buffer
	load.Stdout = &loadOut
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if load.ProcessState == nil {
			_ = load.Process.Kill()
			_ = load.Wait()
		}
	})
	srv.waitLine(t, func(kv map[string]string) bool {
		n, _ := strconv.Atoi(kv["received"])
		return kv["msg"] == "totals" && n > 3000+1000
	})
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := srv.waitLine(t, func(kv map[string]string) bool { return kv["msg"] == "stopped" })
	if err := waitExit(load); err != nil && !isExit(err, 1) { // 1: orders the server never read are missing
		t.Fatalf("omsload: %v", err)
	}
	if err := waitExit(srv.cmd); err != nil {
		t.Fatalf("minioms did not exit cleanly: %v", err)
	}
	var report map[string]any
	if err := json.Unmarshal(loadOut.Bytes(), &report); err != nil {
		t.Fatalf("omsload output %q: %v", loadOut.String(), err)
	}
	received, _ := strconv.ParseFloat(stopped["received"], 64)
	answered, _ := strconv.ParseFloat(stopped["answered"], 64)
	if received != answered || stopped["dropped"] != "0" {
		t.Fatalf("server read %v orders and answered %v (dropped %s)", received, answered, stopped["dropped"])
	}
	// The first run's 3000 plus this one's.
	if got := report["responses"].(float64) + 3000; got != answered {
		t.Fatalf("server answered %v, omsload received %v", answered, got)
	}
	if report["fifo_violations"] != 0.0 || report["duplicate_responses"] != 0.0 || report["unknown_responses"] != 0.0 {
		t.Fatalf("violations during shutdown: %v", report)
	}
}

func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/boomerangd/boomerang/cmd/minioms", "github.com/boomerangd/boomerang/cmd/omsload")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// server is a running minioms process and its parsed log lines.
type server struct {
	cmd   *exec.Cmd
	addr  string
	lines chan map[string]string // closed when stderr ends
}

func startMinioms(t *testing.T, bin string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "minioms"), append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, lines: make(chan map[string]string, 4096)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.lines <- parseLogLine(sc.Text())
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		for range s.lines {
		}
	})
	s.addr = s.waitLine(t, func(kv map[string]string) bool { return kv["msg"] == "listening" })["addr"]
	return s
}

// waitLine returns the first log line from now on that satisfies match.
func (s *server) waitLine(t *testing.T, match func(map[string]string) bool) map[string]string {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case kv, ok := <-s.lines:
			if !ok {
				t.Fatal("minioms exited before the expected log line")
			}
			if match(kv) {
				return kv
			}
		case <-timeout:
			t.Fatal("timed out waiting for a minioms log line")
		}
	}
}

func runOmsload(t *testing.T, bin string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "omsload"), args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(cmd); err != nil {
		t.Fatalf("omsload %v: %v\n%s", args, err, out.String())
	}
	var report map[string]any
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("omsload output %q: %v", out.String(), err)
	}
	return report
}

// waitExit waits for cmd, killing it after waitLimit.
func waitExit(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		<-done
		return errors.New(filepath.Base(cmd.Path) + " did not exit in time")
	}
}

func isExit(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
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

// The demo and the Boomerang server run side by side with their
// defaults: their default ports differ.
func TestDefaultPortDiffersFromTheServers(t *testing.T) {
	for _, addr := range []string{boomerang.DefaultTCPAddr, boomerang.DefaultHTTPAddr} {
		if oms.DefaultListen == addr {
			t.Fatalf("minioms listens on %s by default, as the server does", addr)
		}
	}
}

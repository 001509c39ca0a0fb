package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

const waitLimit = 60 * time.Second

// TestBinary builds cmd/boomerang, runs it on free ports with a temporary
// data directory, logs in over raw TCP with the generated admin password,
// registers a task, stops it with SIGTERM (exit code 0), and starts it
// again to find the task and the password unchanged.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "boomerang")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(t.TempDir(), "data")

	p := startBinary(t, bin, "--data-dir", data, "--tcp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--log-level", "debug")
	password := p.waitFor(t, regexp.MustCompile(`generated password: (\S+)`))[1]
	if resp, err := http.Get("http://" + p.httpAddr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()

	c := dial(t, p.tcpAddr)
	session := c.call(t, &boomerangv1.Request{Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: "admin", Password: password}}}).GetLogin().GetSessionId()
	reg := c.call(t, &boomerangv1.Request{SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
		Payload: []byte("later"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 3_600_000},
	}}}).GetRegisterTask()
	if reg == nil || !reg.Created {
		t.Fatal("RegisterTask did not create a task")
	}
	c.close()
	p.stop(t, syscall.SIGTERM)

	// Second start: no new password, the first one works, the task is
	// still there.
	p = startBinary(t, bin, "--data-dir", data, "--tcp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0")
	c = dial(t, p.tcpAddr)
	session = c.call(t, &boomerangv1.Request{Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: "admin", Password: password}}}).GetLogin().GetSessionId()
	got := c.call(t, &boomerangv1.Request{SessionId: session, Body: &boomerangv1.Request_GetTask{GetTask: &boomerangv1.GetTaskRequest{Id: reg.Task.Id}}}).GetGetTask()
	if string(got.GetTask().GetPayload()) != "later" {
		t.Fatalf("task after restart: %v", got)
	}
	c.close()
	p.stop(t, syscall.SIGINT)
	if strings.Contains(p.stderr(), "generated password") {
		t.Fatal("a password was generated on the second start")
	}
}

// process is a running boomerang and the lines of its stderr.
type process struct {
	cmd      *exec.Cmd
	lines    chan string // closed at the end of stderr
	seen     []string
	tcpAddr  string
	httpAddr string
}

var listening = regexp.MustCompile(`msg=listening tcp=(\S+) http=(\S+)`)

func startBinary(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, lines: make(chan string, 1024)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		for range p.lines {
		}
	})
	m := p.waitFor(t, listening)
	p.tcpAddr, p.httpAddr = m[1], m[2]
	return p
}

// waitFor returns the submatches of the next stderr line matching re.
func (p *process) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("boomerang exited before printing %v; stderr:\n%s", re, p.stderr())
			}
			p.seen = append(p.seen, line)
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %v; stderr:\n%s", re, p.stderr())
		}
	}
}

func (p *process) stderr() string { return strings.Join(p.seen, "\n") }

// stop sends sig and expects a clean exit with code 0.
func (p *process) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, regexp.MustCompile(`msg=stopped`))
	for line := range p.lines {
		p.seen = append(p.seen, line)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("boomerang exited with %v after %v; stderr:\n%s", err, sig, p.stderr())
		}
	case <-time.After(waitLimit):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("boomerang did not exit after %v", sig)
	}
}

// rawClient speaks raw TCP frames, one request at a time.
type rawClient struct {
	nc net.Conn
	br *bufio.Reader
	id uint64
}

func dial(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return &rawClient{nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawClient) call(t *testing.T, req *boomerangv1.Request) *boomerangv1.Response {
	t.Helper()
	c.id++
	req.RequestId = c.id
	if _, err := protodelim.MarshalTo(c.nc, req); err != nil {
		t.Fatal(err)
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	resp := new(boomerangv1.Response)
	if err := protodelim.UnmarshalFrom(c.br, resp); err != nil {
		t.Fatal(err)
	}
	if resp.RequestId != c.id || resp.Error != nil {
		t.Fatalf("request %d: %v", c.id, resp)
	}
	return resp
}

func (c *rawClient) close() {
	_ = c.nc.(*net.TCPConn).CloseWrite()
	_, _ = io.Copy(io.Discard, c.br)
	_ = c.nc.Close()
}

// Package pgtest runs throwaway PostgreSQL servers for tests and
// benchmarks: initdb into a temporary directory, postgres on a free
// loopback port, stopped and removed at the end. It uses the machine's
// PostgreSQL binaries (Debian's postgresql package; .ci/run installs it)
// and, when run as root, runs the server as the postgres user, since
// PostgreSQL refuses to run as root.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startLimit bounds initdb and the server's start.
const startLimit = 2 * time.Minute

// Options tune a server.
type Options struct {
	// Durable keeps fsync and synchronous commits on, as in production;
	// benchmarks want it. Off by default: tests only need a server that
	// survives its clients, not the machine.
	Durable bool
	// Settings are extra postgres -c name=value settings.
	Settings map[string]string
}

// Server is a running PostgreSQL server.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
	dbs  atomic.Int64
}

// Start runs a server for the test and stops it when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// New starts a server; Stop it when done.
func New(opts Options) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "boomerang-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	cred, err := serverUser(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "boomerang", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"-D", data, "-p", strconv.Itoa(s.port), "-k", dir, "-c", "listen_addresses=127.0.0.1"}
	settings := map[string]string{"max_connections": "200"}
	if !opts.Durable {
		settings["fsync"] = "off"
		settings["synchronous_commit"] = "off"
		settings["full_page_writes"] = "off"
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	for k, v := range settings {
		args = append(args, "-c", k+"="+v)
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	// Pdeathsig: a test binary killed by its timeout takes the server
	// with it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: postgres: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// binDir finds the directory of initdb and postgres: on the PATH, else
// Debian's /usr/lib/postgresql/<version>/bin, the newest version.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("pgtest: PostgreSQL binaries not found (apt-get install postgresql; .ci/run does)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// serverUser is who runs the server: the current user, or postgres when
// that is root. dir is handed to that user.
func serverUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs a postgres user to run the server: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startLimit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-tick.C:
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
			return fmt.Errorf("pgtest: postgres exited: %s", log)
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres did not accept connections: %w", err)
		}
	}
}

// DSN is the connection string of a database of the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://boomerang@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Database creates a new, empty database and returns its connection
// string.
func (s *Server) Database(tb testing.TB) string {
	tb.Helper()
	name := "test" + strconv.FormatInt(s.dbs.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), startLimit)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	return s.DSN(name)
}

// Log returns what the server has logged, for failure messages.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return strings.TrimSpace(string(b))
}

// Stop shuts the server down (fast shutdown: sessions are ended) and
// removes its directory. It may be called more than once.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.done:
			case <-time.After(startLimit):
				_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
				<-s.done
			}
		}
	}
	os.RemoveAll(s.dir)
}

package auth

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSource is where the tests' logins come from.
const testSource = "192.0.2.1:40000"

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// lightHash keeps tests fast under -race; the format and the checks are
// the same as with the production parameters.
var lightHash = HashParams{Time: 1, MemoryKiB: 64, Threads: 1}

type fixture struct {
	keys  [][]byte
	dir   string
	st    *store.Store
	node  *replica.Node
	clock *clockwork.FakeClock
	a     *Auth
	tune  func(*Config)
}

// newFixture runs an Auth over a real store in a temp dir and a fake
// clock.
func newFixture(t *testing.T, tune func(*Config)) *fixture {
	t.Helper()
	f := &fixture{keys: [][]byte{GenerateKey()}, dir: t.TempDir(), clock: clockwork.NewFakeClockAt(epoch), tune: tune}
	f.open(t)
	t.Cleanup(func() { f.close(t) })
	return f
}

func (f *fixture) open(t *testing.T) {
	t.Helper()
	st, err := store.Open(f.dir, store.Options{})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	// Every login comes from one source at one instant of the fake clock:
	// lift the per-source rate, which budget tests set themselves.
	cfg := Config{Clock: f.clock, Hash: lightHash, SecretKeys: f.keys, LoginsPerSource: 1e6, LoginChecksPerSecond: 1e6}
	if f.tune != nil {
		f.tune(&cfg)
	}
	a, err := New(st, cfg)
	if err != nil {
		_ = st.Close()
		t.Fatalf("New: %v", err)
	}
	a.pause = func(time.Duration) {} // unknown ids: the wait is real time, not the fake clock's
	node, err := startSystem(a, st, replica.Config{ID: 1})
	if err != nil {
		_ = st.Close()
		t.Fatalf("start the system group: %v", err)
	}
	if err := a.Reseal(); err != nil {
		t.Errorf("Reseal: %v", err)
	}
	f.st, f.a, f.node = st, a, node
}

// startSystem runs a replica node that hosts only the system group, fed
// to a, and waits until it has a leader that a can reach: this node, or
// any other once a change of this node's commits.
func startSystem(a *Auth, st *store.Store, cfg replica.Config) (*replica.Node, error) {
	cfg.Shards, cfg.Store, cfg.StateMachine = []uint16{store.SystemShard}, st, a
	node, err := replica.New(cfg)
	if err != nil {
		return nil, err
	}
	a.Attach(node)
	if err := node.Start(); err != nil {
		return nil, err
	}
	if len(cfg.Peers) > 1 {
		return node, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.AwaitLeader(ctx); err != nil {
		node.Stop()
		return nil, err
	}
	return node, nil
}

func (f *fixture) close(t *testing.T) {
	t.Helper()
	if f.st == nil {
		return
	}
	f.node.Stop()
	if err := f.st.Close(); err != nil {
		t.Errorf("store.Close: %v", err)
	}
	f.st, f.a = nil, nil
}

// reopen simulates a restart: a new Auth over the same directory.
func (f *fixture) reopen(t *testing.T) {
	t.Helper()
	f.close(t)
	f.open(t)
}

func (f *fixture) register(t *testing.T, id, password string, admin bool) {
	t.Helper()
	role := RoleClient
	if admin {
		role = RoleAdmin
	}
	if _, _, err := f.a.RegisterClient(ClientSpec{ID: id, Password: password, Role: role}); err != nil {
		t.Fatalf("RegisterClient(%q): %v", id, err)
	}
}

func (f *fixture) login(t *testing.T, id, password string) Session {
	t.Helper()
	s, err := f.a.Login(id, password, testSource)
	if err != nil {
		t.Fatalf("Login(%q): %v", id, err)
	}
	return s
}

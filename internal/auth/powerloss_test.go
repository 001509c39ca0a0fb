package auth

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
)

// The power-loss test changes clients and logs in on a standalone node
// whose store is on an in-memory filesystem, cuts the power at a random
// point (the filesystem keeps only what was synced), starts again from
// what is left, and checks that every acknowledged change survived:
// registered clients with their latest acknowledged password, no
// deregistered client, every acknowledged session. A change under way
// when the power went may or may not have taken effect, so its client
// is not checked again.
func TestPowerLossKeepsClientChanges(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	fs.SyncDelay(time.Millisecond)
	keys := [][]byte{GenerateKey()}
	clock := clockwork.NewFakeClockAt(epoch)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	want := &acked{passwords: map[string]string{}, deleted: map[string]bool{}, sessions: map[string]string{}, inflight: map[int]string{}}
	const rounds, workers = 6, 3
	for round := range rounds {
		a, stop := openOnFS(t, fs, keys, clock)
		want.check(t, round, a)
		want.start(10 + rng.IntN(40))
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() { errs <- want.work(a, fmt.Sprintf("r%d-w%d", round, w), w) })
		}
		select {
		case <-want.enough:
		case err := <-errs: // before the power went
			t.Fatalf("round %d: %v", round, err)
		}
		fs = want.powerOff(fs)
		wg.Wait()
		stop()
	}
	a, stop := openOnFS(t, fs, keys, clock)
	defer stop()
	want.check(t, rounds, a)
}

// openOnFS starts a standalone node's Auth on the store in fs.
func openOnFS(t *testing.T, fs *store.MemFS, keys [][]byte, clock clockwork.Clock) (*Auth, func()) {
	t.Helper()
	st, err := store.Open("/data", store.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(st, Config{Clock: clock, Hash: lightHash, SecretKeys: keys, LoginsPerSource: 1e6, LoginChecksPerSecond: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	node, err := startSystem(a, st, replica.Config{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	return a, func() {
		node.Stop()
		_ = st.Close() // the store of a machine whose power went may fail to close
	}
}

// acked is what was acknowledged before the power went.
type acked struct {
	mu        sync.Mutex
	passwords map[string]string // client → its password
	deleted   map[string]bool
	sessions  map[string]string // session id → client
	inflight  map[int]string    // worker → the client it is changing
	cut       bool
	count     int
	want      int
	enough    chan struct{}
}

func (w *acked) start(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cut, w.count, w.want, w.enough = false, 0, n, make(chan struct{})
}

// powerOff ends the round and returns what fs holds after a power loss
// now: the changes under way are forgotten, as they may or may not have
// been made.
func (w *acked) powerOff(fs *store.MemFS) *store.MemFS {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cut = true
	for _, client := range w.inflight {
		delete(w.passwords, client)
		for id, c := range w.sessions {
			if c == client {
				delete(w.sessions, id)
			}
		}
	}
	clear(w.inflight)
	after := fs.Crash()
	after.SyncDelay(time.Millisecond)
	return after
}

// begin says that worker changes client; it reports false once the
// power went.
func (w *acked) begin(worker int, client string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut {
		return false
	}
	w.inflight[worker] = client
	return true
}

// ack records an acknowledged change, unless the power went first.
func (w *acked) ack(worker int, record func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut {
		return
	}
	delete(w.inflight, worker)
	record()
	if w.count++; w.count == w.want {
		close(w.enough)
	}
}

// step is a change, and what to record once it is acknowledged.
type step struct {
	do     func() error
	record func()
}

// work registers clients, logs them in, changes their passwords and
// deregisters some, until the power goes. It returns the first error.
func (w *acked) work(a *Auth, prefix string, worker int) error {
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		var s Session
		steps := []step{
			{func() error { _, _, err := a.RegisterClient(ClientSpec{ID: id, Password: id + "-one"}); return err },
				func() { w.passwords[id] = id + "-one" }},
			{func() (err error) { s, err = a.Login(id, id+"-one", testSource); return err },
				func() { w.sessions[s.ID] = id }},
		}
		switch i % 3 {
		case 1:
			steps = append(steps, step{func() error { return a.ChangePassword(id, "", id+"-two", testSource, "") },
				func() { w.passwords[id] = id + "-two"; delete(w.sessions, s.ID) }})
		case 2:
			steps = append(steps, step{func() error { return a.DeregisterClient(id) },
				func() { delete(w.passwords, id); delete(w.sessions, s.ID); w.deleted[id] = true }})
		}
		for _, step := range steps {
			if !w.begin(worker, id) {
				return nil
			}
			if err := step.do(); err != nil {
				return fmt.Errorf("client %q: %w", id, err)
			}
			w.ack(worker, step.record)
		}
	}
}

// check compares a's state with what was acknowledged.
func (w *acked) check(t *testing.T, round int, a *Auth) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, pw := range w.passwords {
		if !a.CheckPassword(id, pw) {
			t.Errorf("round %d: client %q lost, or its acknowledged password", round, id)
		}
	}
	for id := range w.deleted {
		if _, err := a.Client(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("round %d: deregistered client %q is back: %v", round, id, err)
		}
	}
	for sid, id := range w.sessions {
		if p, err := a.Authenticate(sid); err != nil || p.Client != id {
			t.Errorf("round %d: a session of %q was lost: %+v, %v", round, id, p, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

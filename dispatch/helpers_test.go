package dispatch

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait in these tests: a stalled engine fails the
// test instead of hanging it.
const waitLimit = 20 * time.Second

func start[T any](t testing.TB, cfg Config[T]) *Engine[T] {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { closeEngine(t, e) })
	return e
}

func closeEngine[T any](t testing.TB, e *Engine[T]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// submit retries TrySubmitMode while the engine is busy.
func submit[T any](t testing.TB, e *Engine[T], k Key, m Mode, v T) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		err := e.TrySubmitMode(k, m, v)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("TrySubmit(%v): %v", k, err)
		}
		runtime.Gosched()
	}
}

func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("stalled waiting for %s", what)
	}
}

// waitStats waits, one loop round trip at a time, until the engine's
// totals satisfy cond.
func waitStats[T any](t testing.TB, e *Engine[T], cond func(PartitionStats) bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond(Total(e.Stats())) {
		if time.Now().After(deadline) {
			t.Fatalf("stats never reached the expected state: %+v", Total(e.Stats()))
		}
		if err := e.barrier(); err != nil {
			t.Fatal(err)
		}
	}
}

// history records handler events from many goroutines in one order.
type history struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	key  Key
	seq  uint64
	item int
}

func (h *history) add(ev event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *history) snapshot() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.events...)
}

// checkFIFO fails if any family's items appear out of submission order.
func checkFIFO(t testing.TB, evs []event) {
	t.Helper()
	last := map[Key]int{}
	for i, ev := range evs {
		if prev, ok := last[ev.key]; ok && ev.item <= prev {
			t.Fatalf("event %d: family %v ran item %d after %d", i, ev.key, ev.item, prev)
		}
		last[ev.key] = ev.item
	}
}

// exclusive detects two tasks of one family inside the handler at once.
type exclusive struct {
	mu      sync.Mutex
	running map[Key]bool
	bad     error
}

func (x *exclusive) enter(k Key) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.running == nil {
		x.running = map[Key]bool{}
	}
	if x.running[k] && x.bad == nil {
		x.bad = errors.New("two tasks of family " + k.String() + " in flight")
	}
	x.running[k] = true
}

func (x *exclusive) leave(k Key) {
	x.mu.Lock()
	delete(x.running, k)
	x.mu.Unlock()
}

func (x *exclusive) err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.bad
}

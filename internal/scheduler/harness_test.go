package scheduler

import (
	"context"
	"errors"
	"flag"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/boomerangd/boomerang/internal/store"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Every test checks its proposals; benchmarks measure without.
	checkProposals = flag.Lookup("test.bench").Value.String() == ""
	if childMain() {
		return
	}
	goleak.VerifyTestMain(m)
}

const waitLimit = 20 * time.Second

// epoch is the fake clock's start: a fixed instant keeps failures
// reproducible.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness runs a scheduler on a real store in a temp dir, a fake clock,
// and a deliverer whose outcomes the test decides.
type harness struct {
	t     tester
	dir   string
	fs    *store.MemFS // the store's filesystem; nil: the disk
	clock *clockwork.FakeClock
	del   *recorder
	st    *store.Store
	s     *Scheduler
	tune  func(*Config)
}

// tester is what the harness needs of *testing.T and *rapid.T.
type tester interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

func newHarness(t *testing.T, tune func(*Config)) *harness {
	t.Helper()
	h := startHarness(t, t.TempDir(), tune)
	t.Cleanup(h.close)
	return h
}

// newPowerHarness is newHarness on a MemFS, so that the test can cut the
// power.
func newPowerHarness(t *testing.T, tune func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, dir: "/data", fs: store.NewMemFS(), clock: newFakeClock(), del: newRecorder(), tune: tune}
	h.open()
	t.Cleanup(h.close)
	return h
}

// startHarness runs a harness in dir; the caller closes it.
func startHarness(t tester, dir string, tune func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, clock: newFakeClock(), del: newRecorder(), tune: tune}
	h.open()
	return h
}

func (h *harness) open() {
	h.t.Helper()
	st, err := store.Open(h.dir, store.Options{FS: h.fs})
	if err != nil {
		h.t.Fatalf("store.Open: %v", err)
	}
	cfg := Config{Store: st, Deliverer: h.del, Clock: h.clock, Partitions: 2}
	if h.tune != nil {
		h.tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	h.st, h.s = st, s
}

func (h *harness) close() {
	if h.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.s.Stop(ctx); err != nil {
		h.t.Errorf("Stop: %v", err)
	}
	if err := h.st.Close(); err != nil {
		h.t.Errorf("store Close: %v", err)
	}
	h.s = nil
}

// crash stops the scheduler where it is, as a killed process would: what
// was not journaled is redone after the next open.
func (h *harness) crash() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.s.Stop(ctx)
	if err := h.st.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.s = nil
	h.del.forget()
}

// powerLoss keeps only what the store had synced, as a machine losing
// power would, then starts again on it. The harness must run on a MemFS.
func (h *harness) powerLoss() {
	h.t.Helper()
	after := h.fs.Crash()
	h.crash()
	h.fs = after
	h.del.cut.Store(false) // the power is back
	h.open()
}

// restart stops the scheduler cleanly and starts a new one on the same
// store directory and clock.
func (h *harness) restart() {
	h.t.Helper()
	h.close()
	h.del.forget()
	h.open()
}

func (h *harness) register(req RegisterRequest) TaskView {
	h.t.Helper()
	if req.Client == "" {
		req.Client = "acme"
	}
	v, _, err := h.s.Register(context.Background(), req)
	if err != nil {
		h.t.Fatalf("Register(%+v): %v", req, err)
	}
	return v
}

// advance moves the fake clock and waits until the scheduler has acted on
// everything that became due.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.settle()
}

// settle waits until the scheduler has done everything it can do at the
// current fake time: every due timer fired, every ready task started as
// far as slots allow, every batch journaled and applied, and whatever can
// be delivered now handed to the deliverer.
func (h *harness) settle() {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	var prev settleSnapshot
	for {
		// A request is answered before its loop iteration advances the
		// wheel; the second round trip is answered only after a full
		// iteration, so every timer due at the current fake time has
		// fired by then.
		h.roundTrip()
		h.roundTrip()
		snap, quiet := h.snapshot()
		if quiet && snap == prev {
			return
		}
		prev = snap
		if time.Now().After(deadline) {
			h.t.Fatalf("scheduler never settled: %+v", snap)
		}
	}
}

type settleSnapshot struct {
	registered, attempts, delivered, failed uint64
	ready, busy, flights, runs, timers      int
}

// snapshot reads the counters and reports whether every loop is quiet:
// nothing in its inbox or journal, no overdue timer, load or sweep, and
// no ready work that a free slot could start.
func (h *harness) snapshot() (settleSnapshot, bool) {
	c := &h.s.counters
	snap := settleSnapshot{
		registered: c.registered.Load(), attempts: c.attempts.Load(),
		delivered: c.delivered.Load(), failed: c.failed.Load(),
	}
	quiet := true
	for _, p := range h.s.parts {
		_, _ = h.s.call(context.Background(), p, func(done func(result)) {
			p.inbox.mu.Lock()
			waiting := len(p.inbox.msgs)
			p.inbox.mu.Unlock()
			now := p.mono()
			next, armed := p.wheel.NextExpiry()
			if p.undecided() || waiting > 0 || p.unread > 0 ||
				(armed && !next.After(p.wall())) || !now.Before(p.nextLoad) || !now.Before(p.nextSweep) ||
				(len(p.ready) > 0 && p.busy < p.slots) {
				quiet = false
			}
			snap.ready += len(p.ready)
			snap.busy += p.busy
			snap.flights += len(p.flights)
			snap.runs += len(p.runs)
			snap.timers += len(p.timers)
			done(result{})
		})
	}
	return snap, quiet
}

// roundTrip returns once every loop has run everything posted before it.
func (h *harness) roundTrip() {
	h.t.Helper()
	for _, p := range h.s.parts {
		if _, err := h.s.call(context.Background(), p, func(done func(result)) { done(result{}) }); err != nil {
			h.t.Fatalf("round trip: %v", err)
		}
	}
}

func newFakeClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(epoch) }

// recorder is a Deliverer that hands every attempt to the test.
type recorder struct {
	attempts chan *attempt
	auto     func(d Delivery) (error, bool) // optional immediate outcome
	// cut drops attempts unseen and unanswered, as a machine without
	// power would.
	cut atomic.Bool
}

type attempt struct {
	Delivery
	done func(error)
}

func newRecorder() *recorder { return &recorder{attempts: make(chan *attempt, 1<<16)} }

func (r *recorder) Deliver(d Delivery, done func(error)) {
	if r.cut.Load() {
		return
	}
	if r.auto != nil {
		if err, ok := r.auto(d); ok {
			done(err)
			return
		}
	}
	r.attempts <- &attempt{Delivery: d, done: done}
}

// forget drops attempts left over from a stopped scheduler.
func (r *recorder) forget() { r.drain() }

// drain returns the attempts waiting, oldest first.
func (r *recorder) drain() []*attempt {
	var out []*attempt
	for {
		select {
		case a := <-r.attempts:
			out = append(out, a)
		default:
			return out
		}
	}
}

// next returns the next attempt, failing the test if none comes.
func (h *harness) next() *attempt {
	h.t.Helper()
	select {
	case a := <-h.del.attempts:
		return a
	case <-time.After(waitLimit):
		h.t.Fatal("no delivery attempt")
		return nil
	}
}

// none fails if an attempt is waiting. Call after settle.
func (h *harness) none() {
	h.t.Helper()
	select {
	case a := <-h.del.attempts:
		h.t.Fatalf("unexpected attempt of task %d (%s) attempt %d", a.Task.Id, a.Task.Payload, a.Attempt)
	default:
	}
}

// expect takes the next attempt and checks its payload and attempt number.
func (h *harness) expect(payload string, attemptNo int) *attempt {
	h.t.Helper()
	a := h.next()
	if got := string(a.Task.Payload); got != payload || a.Attempt != attemptNo {
		h.t.Fatalf("attempt of %q #%d, want %q #%d", got, a.Attempt, payload, attemptNo)
	}
	return a
}

// ack acknowledges an attempt and waits until the scheduler has acted on
// it, so the outcome is stamped with the current fake time.
func (h *harness) ack(a *attempt) {
	h.t.Helper()
	a.done(nil)
	h.settle()
}

// fail fails an attempt and waits until the scheduler has acted on it.
func (h *harness) fail(a *attempt, err error) {
	h.t.Helper()
	a.done(err)
	h.settle()
}

var errRefused = errors.New("receiver refused")

func payload(s string) []byte { return []byte(s) }

package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

var blockOnError = storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR

// An unblocked head keeps its due time and sequence: after a restart it
// still goes before a later task of its group due in the same
// millisecond, though its new id is larger.
func TestUnblockedHeadKeepsItsPlaceAcrossRestart(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Retry = FixedRetry{Attempts: 1} })
	at := epoch.Add(time.Second)
	h.register(RegisterRequest{Payload: payload("head"), Group: "g", At: at, Mode: blockOnError})
	h.register(RegisterRequest{Payload: payload("next"), Group: "g", At: at, Mode: blockOnError})
	h.advance(time.Second)
	h.fail(h.expect("head", 1), errRefused)
	h.none()
	v, err := h.s.Unblock(context.Background(), acme, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	a := h.expect("head", 1)
	if a.Task.Id != v.Task.Id || v.Task.DueMs != at.UnixMilli() {
		t.Fatalf("revived head %+v, delivered %d", v.Task, a.Task.Id)
	}
	h.crash() // the revived head was under way
	h.open()
	h.settle()
	h.ack(h.expect("head", 1))
	h.ack(h.expect("next", 1))
}

// Updating the due time of a retrying head starts a new occurrence: the
// group looks at its order again, and the head goes first only if it
// still sorts first.
func TestUpdatingARetryingHeadKeepsGroupOrder(t *testing.T) {
	h := newHarness(t, threeAttempts)
	head := h.register(RegisterRequest{Payload: payload("head"), Group: "g", Delay: time.Second})
	h.register(RegisterRequest{Payload: payload("later"), Group: "g", Delay: 5 * time.Second})
	h.advance(time.Second)
	h.fail(h.expect("head", 1), errRefused) // retrying, due at 2 s
	// Moved earlier, into the past: it still goes before "later", at once.
	past := epoch.Add(-time.Hour)
	if _, err := h.s.Update(context.Background(), acme, UpdateRequest{ID: head.Task.Id, At: &past}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.fail(h.expect("head", 1), errRefused)
	// Moved after "later": "later" goes first, then the head.
	after := epoch.Add(10 * time.Second)
	if _, err := h.s.Update(context.Background(), acme, UpdateRequest{ID: head.Task.Id, At: &after}); err != nil {
		t.Fatal(err)
	}
	h.advance(3 * time.Second) // 4 s
	h.none()
	h.advance(time.Second) // 5 s
	h.ack(h.expect("later", 1))
	h.advance(5 * time.Second) // 10 s
	h.ack(h.expect("head", 1))
}

// A task registered with a due time earlier than its waiting siblings,
// even in the past, goes before them. After a crash the group starts over
// from its order: the task that was under way is delivered again in its
// place, which may now be behind one that was registered meanwhile with
// an earlier due time.
func TestTaskRegisteredInThePastGoesFirst(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			h := newHarness(t, nil)
			h.register(RegisterRequest{Payload: payload("blocker"), Group: "g"})
			h.settle()
			blocker := h.expect("blocker", 1) // holds the group
			h.register(RegisterRequest{Payload: payload("now"), Group: "g"})
			h.register(RegisterRequest{Payload: payload("past"), Group: "g", At: epoch.Add(-time.Minute)})
			h.register(RegisterRequest{Payload: payload("now-2"), Group: "g"})
			if restart {
				h.crash()
				h.open()
				h.settle()
				h.ack(h.expect("past", 1))
				blocker = h.expect("blocker", 1)
			}
			h.ack(blocker)
			if !restart {
				h.ack(h.expect("past", 1))
			}
			h.ack(h.expect("now", 1))
			h.ack(h.expect("now-2", 1))
		})
	}
}

// A replayed dead letter is due now and accepted now: it goes after the
// group's tasks already due, before those due later.
func TestReplayJoinsTheGroupAsANewTaskDueNow(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Retry = FixedRetry{Attempts: 1} })
	h.register(RegisterRequest{Payload: payload("dead"), Group: "g"})
	h.settle()
	h.fail(h.expect("dead", 1), errRefused)
	h.register(RegisterRequest{Payload: payload("blocker"), Group: "g"})
	h.settle()
	blocker := h.expect("blocker", 1)
	h.register(RegisterRequest{Payload: payload("due"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("soon"), Group: "g", Delay: time.Second})
	dls, _, _ := h.s.DeadLetters(context.Background(), acme, "acme", 0, 10)
	if _, err := h.s.Replay(context.Background(), acme, dls[0].Id); err != nil {
		t.Fatal(err)
	}
	h.ack(blocker)
	h.ack(h.expect("due", 1))
	h.ack(h.expect("dead", 1))
	h.advance(time.Second)
	h.ack(h.expect("soon", 1))
}

// A local refusal (a full pool, shutting down) is no attempt: the count
// and the retry budget stay as they were, and the task is tried again
// after RefusalDelay, holding its group meanwhile.
func TestLocalRefusalIsNotAnAttempt(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Retry = FixedRetry{Attempts: 1}
		c.RefusalDelay = 2 * time.Second
	})
	v := h.register(RegisterRequest{Payload: payload("a"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("b"), Group: "g"})
	h.settle()
	for range 3 {
		h.fail(h.expect("a", 1), fmt.Errorf("%w: pool full", ErrNotAttempted))
		got, err := h.s.Get(context.Background(), acme, v.Task.Id)
		if err != nil || got.Task.Attempts != 0 || got.Task.LastError != "" {
			t.Fatalf("after a refusal: %+v, %v", got.Task, err)
		}
		h.advance(2*time.Second - time.Millisecond)
		h.none() // b waits behind it
		h.advance(time.Millisecond)
	}
	h.ack(h.expect("a", 1))
	h.ack(h.expect("b", 1))
	if dls, _, _ := h.s.DeadLetters(context.Background(), acme, "acme", 0, 10); len(dls) != 0 {
		t.Fatalf("refusals used up the single attempt: %v", dls)
	}
}

// Whatever a receiver answers, its text is stored made safe and bounded,
// and the scheduler goes on for everyone.
func TestHostileErrorTextIsStoredSafely(t *testing.T) {
	h := newHarness(t, threeAttempts)
	for i, text := range []string{
		strings.Repeat("é", 200) + "\xe2\x82", // cut in a character
		"\x1b]0;pwned\x07\x00\u202e" + strings.Repeat("x", 1<<20),
		string([]byte{0xff, 0xfe, 0xfd}),
	} {
		v := h.register(RegisterRequest{Payload: payload(fmt.Sprint("t", i))})
		h.settle()
		h.fail(h.expect(fmt.Sprint("t", i), 1), fmt.Errorf("receiver: %s", text))
		got, err := h.s.Get(context.Background(), acme, v.Task.Id)
		if err != nil {
			t.Fatalf("text %d: the scheduler did not record the failure: %v", i, err)
		}
		if e := got.Task.LastError; !utf8.ValidString(e) || len(e) > MaxErrorLen || strings.ContainsAny(e, "\x1b\x00\x07\u202e") {
			t.Fatalf("text %d stored as %q", i, e)
		}
	}
	h.register(RegisterRequest{Payload: payload("after")})
	h.settle()
	h.ack(h.expect("after", 1))
	if err := h.s.Err(); err != nil {
		t.Fatalf("scheduler stopped: %v", err)
	}
}

// A storage failure stops the scheduler visibly: Err and Stats say so,
// and requests fail with the reason rather than hang.
func TestStorageFailureIsVisible(t *testing.T) {
	h := &harness{t: t, dir: "/data", fs: store.NewMemFS(), clock: newFakeClock(), del: newRecorder()}
	h.open()
	defer func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = h.s.Stop(ctx)
		_ = h.st.Close() // the store failed: its error is expected
	}()
	h.register(RegisterRequest{Payload: payload("ok"), Delay: time.Hour})
	h.fs.FailWrites(true)
	_, _, err := h.s.Register(context.Background(), RegisterRequest{Client: "acme", Payload: payload("lost")})
	if err == nil {
		t.Fatal("Register on a failing disk succeeded")
	}
	if h.s.Err() == nil || !h.s.Stats().Stopped {
		t.Fatalf("Err %v, Stats.Stopped %v after a storage failure", h.s.Err(), h.s.Stats().Stopped)
	}
	if _, _, err := h.s.Register(context.Background(), RegisterRequest{Client: "acme"}); err == nil {
		t.Fatal("a stopped scheduler took a registration")
	}
}

// The scheduler's clock never goes back: when the system clock steps back
// nothing stalls, tasks fire after their delay of real time; when it steps
// forward, tasks due by then fire at once.
func TestWallClockStepsDoNotStallTimers(t *testing.T) {
	var skew atomic.Int64
	h := newHarness(t, func(c *Config) { c.wallSkew = func() time.Duration { return time.Duration(skew.Load()) } })
	h.register(RegisterRequest{Payload: payload("before"), Delay: 2 * time.Second})
	h.register(RegisterRequest{Payload: payload("grouped"), Group: "g", Delay: 2 * time.Second})
	skew.Store(int64(-time.Hour)) // the system clock steps back an hour
	h.register(RegisterRequest{Payload: payload("after"), Delay: time.Second})
	h.advance(time.Second)
	h.ack(h.expect("after", 1))
	h.advance(time.Second)
	a, b := h.next(), h.next()
	if got := string(a.Task.Payload) + "," + string(b.Task.Payload); got != "before,grouped" && got != "grouped,before" {
		t.Fatalf("after the step back: %s", got)
	}
	h.ack(a)
	h.ack(b)

	h.register(RegisterRequest{Payload: payload("in a minute"), Delay: time.Minute})
	h.register(RegisterRequest{Payload: payload("in an hour"), Group: "g", Delay: time.Hour})
	skew.Store(int64(2 * time.Minute)) // forward again, past the minute
	h.advance(time.Millisecond)
	h.ack(h.expect("in a minute", 1))
	h.none()
	h.advance(time.Hour)
	h.ack(h.expect("in an hour", 1))
}

// A group holds at most its client's limit of tasks.
func TestGroupFullIsRefused(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.GroupLimit = func(client string) int {
			if client == "acme" {
				return 2
			}
			return 0 // the default
		}
	})
	a := h.register(RegisterRequest{Payload: payload("a"), Group: "g", Delay: time.Second})
	h.register(RegisterRequest{Payload: payload("b"), Group: "g", Delay: time.Second})
	if _, _, err := h.s.Register(context.Background(), RegisterRequest{Client: "acme", Group: "g"}); err != ErrGroupFull {
		t.Fatalf("a third task: %v, want ErrGroupFull", err)
	}
	h.register(RegisterRequest{Payload: payload("other group"), Group: "h", Delay: time.Second})
	for range 3 {
		h.register(RegisterRequest{Client: "globex", Payload: payload("other client"), Group: "g", Delay: time.Second})
	}
	if err := h.s.Cancel(context.Background(), acme, a.Task.Id); err != nil {
		t.Fatal(err)
	}
	h.register(RegisterRequest{Payload: payload("c"), Group: "g", Delay: time.Second})
}

// A group's record exists while it has tasks or is blocked, and is gone
// once it has neither.
func TestEmptyGroupRecordIsDeleted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Retry = FixedRetry{Attempts: 1} })
	group := func() (*storepb.Group, error) { return h.s.Group(context.Background(), acme, "acme", "g") }
	h.register(RegisterRequest{Payload: payload("a"), Group: "g", Mode: blockOnError})
	if g, err := group(); err != nil || g.Tasks != 1 {
		t.Fatalf("group with a task: %v, %v", g, err)
	}
	h.settle()
	h.fail(h.expect("a", 1), errRefused)
	if g, err := group(); err != nil || g.Tasks != 0 || g.BlockedTask == 0 {
		t.Fatalf("blocked group: %v, %v", g, err)
	}
	if err := h.s.Skip(context.Background(), acme, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	if g, err := group(); err != ErrNotFound {
		t.Fatalf("empty group after skip: %v, %v; want ErrNotFound", g, err)
	}
	h.register(RegisterRequest{Payload: payload("b"), Group: "g"})
	h.settle()
	h.ack(h.expect("b", 1))
	if g, err := group(); err != ErrNotFound {
		t.Fatalf("empty group after a delivery: %v, %v; want ErrNotFound", g, err)
	}
}

// A stuck group (its receiver never answers) holds only its head in
// memory: the tasks due behind it stay on disk, payloads and all, however
// many there are.
func TestStuckGroupHoldsOnlyItsHead(t *testing.T) {
	h := newHarness(t, nil)
	const n, size = 2000, 32 << 10
	big := make([]byte, size)
	for range n {
		h.register(RegisterRequest{Payload: big, Group: "stuck", Delay: time.Second})
	}
	before := heapInUse()
	h.advance(time.Second)
	head := h.next() // never answered
	h.none()
	grown := int64(heapInUse()) - int64(before)
	if grown > 8<<20 {
		t.Fatalf("the heap grew by %d MiB for %d due tasks of %d KiB behind one stuck head", grown>>20, n, size>>10)
	}
	h.ack(head)
	h.ack(h.next()) // the group goes on
	h.crash()       // the rest would be delivered one by one
}

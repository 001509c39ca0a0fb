package wheel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"
)

// A scenario is a list of steps on a wheel whose timers are named. Each
// advance lists the names it must fire, in order; steps attached to a
// name in onFire run inside the fire callback when that timer fires.
// After every step the scenario checks the due passed to fire, Len,
// NextExpiry against the pending timers, and the wheel's invariants.
type step struct {
	kind   stepKind
	name   string
	tick   int64         // add: due tick; advance: target tick
	sub    time.Duration // offset within the tick
	fired  []string      // advance: names fired, in order
	ok     bool          // cancel: expected result
	atTime time.Time     // add or advance at this exact time instead of tick+sub
}

type stepKind uint8

const (
	stepAdd stepKind = iota
	stepCancel
	stepAdvance
)

func add(name string, tick int64) step { return step{kind: stepAdd, name: name, tick: tick} }
func addSub(name string, tick int64, sub time.Duration) step {
	return step{kind: stepAdd, name: name, tick: tick, sub: sub}
}
func addAt(name string, at time.Time) step { return step{kind: stepAdd, name: name, atTime: at} }
func cancel(name string, ok bool) step     { return step{kind: stepCancel, name: name, ok: ok} }
func advance(tick int64, fired ...string) step {
	return step{kind: stepAdvance, tick: tick, fired: fired}
}
func advanceSub(tick int64, sub time.Duration, fired ...string) step {
	return step{kind: stepAdvance, tick: tick, sub: sub, fired: fired}
}
func advanceAt(at time.Time, fired ...string) step {
	return step{kind: stepAdvance, atTime: at, fired: fired}
}

type scenario struct {
	t       *testing.T
	cfg     Config
	w       *Wheel[string]
	handles map[string]Timer
	dues    map[string]time.Time
	pending map[string]bool
	onFire  map[string][]step
	fired   []string
}

func (s *scenario) timeOf(st step) time.Time {
	if !st.atTime.IsZero() {
		return st.atTime
	}
	return atTick(s.cfg, st.tick).Add(st.sub)
}

func (s *scenario) run(steps []step) {
	s.t.Helper()
	for i, st := range steps {
		s.apply(st, fmt.Sprintf("step %d", i))
		s.check(fmt.Sprintf("after step %d", i))
	}
}

func (s *scenario) apply(st step, where string) {
	s.t.Helper()
	switch st.kind {
	case stepAdd:
		due := s.timeOf(st)
		s.handles[st.name] = s.w.Add(due, st.name)
		// The same instant, except that dues beyond ±292 years of the
		// epoch are clamped to it.
		s.dues[st.name] = epoch0.Add(due.Sub(epoch0))
		s.pending[st.name] = true
	case stepCancel:
		v, ok := s.w.Cancel(s.handles[st.name])
		if ok != st.ok || (ok && v != st.name) {
			s.t.Fatalf("%s: Cancel(%s) = (%q, %v), want ok=%v", where, st.name, v, ok, st.ok)
		}
		if ok {
			delete(s.pending, st.name)
		}
	case stepAdvance:
		s.fired = s.fired[:0]
		s.w.Advance(s.timeOf(st), s.fire)
		if !slices.Equal(s.fired, st.fired) {
			s.t.Fatalf("%s: Advance(%v) fired [%s], want [%s]", where, s.timeOf(st),
				strings.Join(s.fired, " "), strings.Join(st.fired, " "))
		}
	}
}

func (s *scenario) fire(due time.Time, name string) {
	s.t.Helper()
	if !s.pending[name] {
		s.t.Fatalf("fired %s, which is not pending", name)
	}
	if !due.Equal(s.dues[name]) {
		s.t.Fatalf("fired %s with due %v, want %v", name, due, s.dues[name])
	}
	delete(s.pending, name)
	s.fired = append(s.fired, name)
	mustVerify(s.t, s.w)
	for i, st := range s.onFire[name] {
		s.apply(st, fmt.Sprintf("firing %s, step %d", name, i))
	}
}

func (s *scenario) check(where string) {
	s.t.Helper()
	mustVerify(s.t, s.w)
	if s.w.Len() != len(s.pending) {
		s.t.Fatalf("%s: Len() = %d, want %d", where, s.w.Len(), len(s.pending))
	}
	wake, ok := s.w.NextExpiry()
	if ok != (len(s.pending) > 0) {
		s.t.Fatalf("%s: NextExpiry() ok = %v with %d pending", where, ok, len(s.pending))
	}
	for name := range s.pending {
		// A timer fires at the start of its due tick, or now if overdue.
		fires := s.dues[name].Truncate(s.cfg.Tick)
		if fires.Before(s.w.Now()) {
			fires = s.w.Now()
		}
		if wake.After(fires) {
			s.t.Fatalf("%s: NextExpiry() = %v, after %s fires at %v", where, wake, name, fires)
		}
	}
}

// small is a wheel of 4 slots × 3 levels: a span of 64 ticks, so every
// boundary is a few ticks away. Ticks written in base 4 read as slots.
var small = Config{Tick: time.Millisecond, SlotsPerLevel: 4, Levels: 3}

func TestScenarios(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cfg    Config
		steps  []step
		onFire map[string][]step
	}{
		{
			name: "due in the past fires on the next advance without time moving",
			cfg:  small,
			steps: []step{
				advance(10),
				add("past", 3), add("before-epoch", -5), add("long-ago", -1000),
				advance(10, "past", "before-epoch", "long-ago"),
			},
		},
		{
			name: "due within the current tick fires on the next advance",
			cfg:  small,
			steps: []step{
				advanceSub(10, 300*time.Microsecond),
				addSub("now", 10, 100*time.Microsecond), addSub("later-this-tick", 10, 900*time.Microsecond),
				advanceSub(10, 400*time.Microsecond, "now", "later-this-tick"),
			},
		},
		{
			name: "overdue timers fire before the next tick's",
			cfg:  small,
			steps: []step{
				advance(10), add("next", 11), add("overdue", 2),
				advance(11, "overdue", "next"),
			},
		},
		{
			name: "advance backwards does nothing, not even overdue timers",
			cfg:  small,
			steps: []step{
				advance(10), add("overdue", 5), add("soon", 12),
				advance(8), advanceSub(9, 999*time.Microsecond),
				advance(12, "overdue", "soon"),
			},
		},
		{
			name: "same tick fires in add order, not by the nanosecond",
			cfg:  small,
			steps: []step{
				addSub("a", 7, 900*time.Microsecond), addSub("b", 7, 100*time.Microsecond),
				addSub("c", 7, 500*time.Microsecond), add("d", 7),
				advance(6), advance(7, "a", "b", "c", "d"),
			},
		},
		{
			name: "same tick keeps add order across levels and cascades",
			cfg:  small,
			// 40 is 220 in base 4. a goes to level 2 from 0; b joins it at
			// 30 (132); the slot cascades at 32 (200) to level 1, where c
			// (from 36, 210) and d (from 39, 213) join it.
			steps: []step{
				add("a", 40), advance(30), add("b", 40), advance(36), add("c", 40),
				advance(39), addSub("d", 40, time.Microsecond),
				advance(40, "a", "b", "c", "d"),
			},
		},
		{
			name: "same tick keeps add order beyond the span",
			cfg:  small,
			steps: []step{
				add("far", 150), advance(100), add("near", 150), advance(149), add("last", 150),
				advance(150, "far", "near", "last"),
			},
		},
		{
			name: "one advance across every level fires in due order",
			cfg:  small,
			steps: []step{
				add("t64", 64), add("t5", 5), add("t33", 33), add("t200", 200), add("t17", 17),
				add("t2", 2), add("t63", 63), add("t18", 18), add("t16", 16), add("t65", 65),
				advance(300, "t2", "t5", "t16", "t17", "t18", "t33", "t63", "t64", "t65", "t200"),
			},
		},
		{
			name: "one advance across every level of the default wheel",
			cfg:  Config{},
			steps: []step{
				add("span+1", 1<<32+1), add("l3", 1<<24), add("l0", 255), add("l1", 256),
				add("l2", 1<<16), add("l2-1", 1<<16-1), add("span", 1<<32), add("span-1", 1<<32-1),
				advance(1<<33, "l0", "l1", "l2-1", "l2", "l3", "span-1", "span", "span+1"),
			},
		},
		{
			name: "beyond the span waits through turns of the top level",
			cfg:  small,
			steps: []step{
				add("far", 1000), advance(64), advance(500), advance(960), advance(999),
				advance(1000, "far"),
			},
		},
		{
			name: "centuries ahead with the default wheel",
			cfg:  Config{},
			steps: []step{
				addAt("y2125", epoch0.AddDate(100, 0, 0)), add("soon", 1),
				advanceAt(epoch0.AddDate(50, 0, 0), "soon"),
				advanceAt(epoch0.AddDate(100, 0, 0).Add(-time.Millisecond)),
				advanceAt(epoch0.AddDate(100, 0, 0), "y2125"),
			},
		},
		{
			name: "dues past the int64 range saturate and still fire",
			cfg:  Config{},
			steps: []step{
				addAt("max", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)),
				advanceAt(epoch0.AddDate(250, 0, 0)),
				advanceAt(time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC), "max"),
			},
		},
		{
			name: "cancel: pending, twice, stale after slot reuse, fired, zero",
			cfg:  small,
			steps: []step{
				add("a", 5), cancel("a", true), cancel("a", false),
				add("b", 5), cancel("a", false), // b reuses a's slot
				advance(5, "b"), cancel("b", false), cancel("never-added", false),
			},
		},
		{
			name: "fire callback adds timers due now, in the past, later in the advance and after it",
			cfg:  small,
			steps: []step{
				add("a", 5), add("b", 5), add("c", 9),
				advance(30, "a", "b", "now", "past", "c", "in-advance", "chained"),
				advance(49), advance(50, "after"),
			},
			onFire: map[string][]step{
				"a": {add("now", 5), add("past", 1), add("in-advance", 20), add("after", 50)},
				"c": {add("chained", 30)},
			},
		},
		{
			name: "fire callback cancels timers in its batch, later in the advance and itself",
			cfg:  small,
			steps: []step{
				add("a", 5), add("b", 5), add("c", 5), add("d", 9), add("e", 40), add("f", 41),
				advance(45, "a", "c", "e"),
			},
			onFire: map[string][]step{
				"a": {cancel("b", true), cancel("d", true), cancel("a", false)},
				"e": {cancel("f", true)}, // f was cascaded with e's slot at 40
			},
		},
		{
			name: "fire callback re-adds into the slot it just freed",
			cfg:  small,
			steps: []step{
				add("a", 5), add("b", 5),
				advance(5, "a", "b", "again"),
			},
			onFire: map[string][]step{
				"a": {cancel("a", false), add("again", 4)},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.ensureDefaults()
			s := &scenario{
				t: t, cfg: cfg, w: newWheel[string](t, cfg, epoch0),
				handles: map[string]Timer{}, dues: map[string]time.Time{}, pending: map[string]bool{},
				onFire: tc.onFire,
			}
			s.run(tc.steps)
		})
	}
}

// TestLevelBoundaries adds one timer at each offset around each level
// boundary (S^k-1, S^k, S^k+1, and beyond the span) from several start
// ticks, and checks it fires on the advance to its tick and not on the
// one before, whether the wheel gets there in one jump or in two.
func TestLevelBoundaries(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Tick: time.Millisecond, SlotsPerLevel: 2, Levels: 5},
		small,
		{Tick: 3 * time.Millisecond, SlotsPerLevel: 8, Levels: 2},
		{Tick: time.Millisecond, SlotsPerLevel: 64, Levels: 1},
		{},
	} {
		cfg.ensureDefaults()
		t.Run(fmt.Sprintf("slots=%d/levels=%d", cfg.SlotsPerLevel, cfg.Levels), func(t *testing.T) {
			t.Parallel()
			s := int64(cfg.SlotsPerLevel)
			span := int64(1) << (uint(cfg.Levels) * slotBits(cfg.SlotsPerLevel))
			offsets := []int64{-1, 0, 1, 2}
			for p := s; p <= span*s; p *= s {
				offsets = append(offsets, p-1, p, p+1)
			}
			starts := []int64{0, 1, s - 1, s, s*s - 1, s*s + 3, span - 1, span, span + s + 1}
			for _, start := range starts {
				for _, offset := range offsets {
					for _, direct := range []bool{true, false} {
						checkFiresAt(t, cfg, start, start+offset, direct)
					}
				}
			}
		})
	}
}

func checkFiresAt(t *testing.T, cfg Config, start, due int64, direct bool) {
	t.Helper()
	w := newWheel[int](t, cfg, epoch0)
	w.Advance(atTick(cfg, start), func(time.Time, int) { t.Fatal("fired on an empty wheel") })
	w.Add(atTick(cfg, due).Add(cfg.Tick/2), 1)
	mustVerify(t, w)
	fires := max(due, start) // overdue fires at the current tick
	wake, ok := w.NextExpiry()
	if !ok || wake.After(atTick(cfg, fires)) {
		t.Fatalf("start %d, due %d: NextExpiry() = %v, %v, want at or before tick %d", start, due, wake, ok, fires)
	}
	count := 0
	fire := func(time.Time, int) { count++ }
	if fires > start {
		if !direct {
			w.Advance(atTick(cfg, start+(fires-start)/2), fire)
		}
		w.Advance(atTick(cfg, fires).Add(-1), fire)
		if count != 0 {
			t.Fatalf("start %d, due %d: fired before its tick", start, due)
		}
		mustVerify(t, w)
	}
	w.Advance(atTick(cfg, fires), fire)
	if count != 1 || w.Len() != 0 {
		t.Fatalf("start %d, due %d: fired %d times, Len %d, want 1 and 0", start, due, count, w.Len())
	}
}

func TestDueIsExactAndNowIsTickAligned(t *testing.T) {
	t.Parallel()
	cfg := Config{Tick: 3 * time.Millisecond}
	start := epoch0.Add(1234567 * time.Nanosecond)
	w := newWheel[int](t, cfg, start)
	if want := start.Truncate(cfg.Tick); !w.Now().Equal(want) {
		t.Fatalf("Now() = %v, want %v", w.Now(), want)
	}
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	dues := []time.Time{
		start.Add(1), start.Add(2*time.Millisecond + 999), start.Add(-time.Hour).In(zone),
		start.Add(7 * time.Second).In(zone), start.Add(-1),
	}
	for i, due := range dues {
		w.Add(due, i)
	}
	got := map[int]time.Time{}
	w.Advance(start.Add(time.Minute), func(due time.Time, i int) { got[i] = due })
	for i, due := range dues {
		if !got[i].Equal(due) {
			t.Errorf("timer %d fired with due %v, want %v", i, got[i], due)
		}
	}
	if want := start.Add(time.Minute).Truncate(cfg.Tick); !w.Now().Equal(want) {
		t.Fatalf("Now() = %v, want %v", w.Now(), want)
	}
}

func TestNextExpiry(t *testing.T) {
	t.Parallel()
	cfg := small
	w := newWheel[int](t, cfg, epoch0)
	if _, ok := w.NextExpiry(); ok {
		t.Fatal("NextExpiry() ok on an empty wheel")
	}
	expect := func(tick int64) {
		t.Helper()
		wake, ok := w.NextExpiry()
		if !ok || !wake.Equal(atTick(cfg, tick)) {
			t.Fatalf("NextExpiry() = %v, %v, want tick %d", wake, ok, tick)
		}
	}
	noop := func(time.Time, int) {}
	// 21 is 111 in base 4: on level 2 from 0, so the first wake-up is the
	// cascade at 16 (100), then 20 (110) on level 1, then 21 itself.
	w.Add(atTick(cfg, 21).Add(time.Microsecond), 1)
	expect(16)
	w.Advance(atTick(cfg, 16), noop)
	expect(20)
	w.Advance(atTick(cfg, 20), noop)
	expect(21)
	w.Add(atTick(cfg, 3), 2) // overdue: due now
	expect(20)
	w.Advance(atTick(cfg, 20), noop)
	expect(21)
	// Beyond the span: the top-level slot of 200 (3020 in base 4) is
	// digit 0, reached at the next turn, 64.
	w.Add(atTick(cfg, 200), 3)
	w.Advance(atTick(cfg, 21), noop)
	expect(64)
	w.Advance(atTick(cfg, 64), noop)
	expect(128)
	w.Advance(atTick(cfg, 199), noop)
	expect(200)
}

func TestCancelDuringCascade(t *testing.T) {
	t.Parallel()
	// Ticks 16 to 31 share one level-2 slot of the small wheel (1xx in
	// base 4), which cascades when the wheel reaches 16.
	t.Run("from the fire callback of an earlier timer in the same advance", func(t *testing.T) {
		t.Parallel()
		s := newScenario(t, small)
		s.onFire = map[string][]step{
			// e fires at 3, before the slot cascades: q and s are still in it.
			"e": {cancel("q", true), cancel("s", true), add("late", 16)},
			// p fires at 16 right after the cascade: v waits behind it in
			// the batch, r has moved to level 0, late is last in the batch.
			"p": {cancel("v", true), cancel("r", true), cancel("q", false)},
		}
		s.run([]step{
			add("e", 3), add("p", 16), add("q", 16), add("r", 18), add("s", 25), add("v", 16),
			advance(40, "e", "p", "late"),
			cancel("q", false), cancel("late", false),
		})
	})
	t.Run("between advances just before the cascade", func(t *testing.T) {
		t.Parallel()
		s := newScenario(t, small)
		s.run([]step{
			add("p", 16), add("q", 16), add("r", 18), add("s", 25),
			advance(15), cancel("q", true), cancel("r", true),
			advance(16, "p"), advance(24), cancel("s", true), advance(40),
		})
		if _, ok := s.w.NextExpiry(); ok {
			t.Fatal("NextExpiry() ok after every timer was cancelled")
		}
	})
	t.Run("beyond the span, just before and after its top-level slot turns", func(t *testing.T) {
		t.Parallel()
		s := newScenario(t, small)
		// 100 and 101 are 1210 and 1211 in base 4: top-level slot 2,
		// which turns at 32 (still beyond) and 96 (in range).
		s.run([]step{
			add("x", 100), add("y", 101), add("z", 101),
			advance(31), cancel("x", true), advance(32), advance(95), cancel("y", true),
			advance(96), advance(101, "z"),
		})
	})
	t.Run("stale handle after its slot is reused inside the callback", func(t *testing.T) {
		t.Parallel()
		s := newScenario(t, small)
		s.onFire = map[string][]step{
			"e": {cancel("q", true), add("reuse", 16), cancel("q", false)},
			"p": {cancel("q", false)},
		}
		s.run([]step{
			add("e", 3), add("p", 16), add("q", 16),
			advance(20, "e", "p", "reuse"),
		})
	})
}

func newScenario(t *testing.T, cfg Config) *scenario {
	cfg.ensureDefaults()
	return &scenario{
		t: t, cfg: cfg, w: newWheel[string](t, cfg, epoch0),
		handles: map[string]Timer{}, dues: map[string]time.Time{}, pending: map[string]bool{},
	}
}

func TestAdvanceFromFirePanicsAndLeavesTheWheelUsable(t *testing.T) {
	t.Parallel()
	w := newWheel[int](t, small, epoch0)
	w.Add(atTick(small, 5), 1)
	w.Add(atTick(small, 5), 2)
	w.Add(atTick(small, 9), 3)
	var fired []int
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Advance from a fire callback did not panic")
			}
		}()
		w.Advance(atTick(small, 10), func(_ time.Time, v int) {
			fired = append(fired, v)
			w.Advance(atTick(small, 11), func(time.Time, int) {})
		})
	}()
	mustVerify(t, w)
	w.Advance(atTick(small, 10), func(_ time.Time, v int) { fired = append(fired, v) })
	if !slices.Equal(fired, []int{1, 2, 3}) || w.Len() != 0 {
		t.Fatalf("fired %v with Len %d, want [1 2 3] and 0", fired, w.Len())
	}
}

func TestRetiredGenerationNeverMatches(t *testing.T) {
	t.Parallel()
	w := newWheel[int](t, small, epoch0)
	w.Add(atTick(small, 5), 1)
	w.slab[0].gen = math.MaxUint32 // as if the slot had been reused 2^32-2 times
	last := Timer{index: 0, gen: math.MaxUint32}
	if v, ok := w.Cancel(last); !ok || v != 1 {
		t.Fatalf("Cancel(last generation) = %d, %v", v, ok)
	}
	next := w.Add(atTick(small, 5), 2)
	if next.index == 0 {
		t.Fatal("a slot with no generations left was reused")
	}
	for _, stale := range []Timer{last, {}, {index: 0, gen: 1}} {
		if _, ok := w.Cancel(stale); ok {
			t.Fatalf("Cancel(%+v) succeeded on a retired slot", stale)
		}
	}
	mustVerify(t, w)
	if w.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", w.Len())
	}
}

func TestCancelForeignHandles(t *testing.T) {
	t.Parallel()
	w := newWheel[int](t, small, epoch0)
	h := w.Add(atTick(small, 5), 1)
	for _, bad := range []Timer{{}, {index: 1, gen: 1}, {index: math.MaxUint32, gen: 1}, {index: 0, gen: h.gen + 1}} {
		if _, ok := w.Cancel(bad); ok {
			t.Fatalf("Cancel(%+v) succeeded", bad)
		}
	}
	if w.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", w.Len())
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	w := newWheel[uint64](t, Config{}, epoch0)
	var handles [256]Timer
	var now time.Time
	fire := func(time.Time, uint64) {}
	round := func() {
		now = w.Now()
		for i := range handles {
			handles[i] = w.Add(now.Add(time.Duration(i%300)*time.Second), uint64(i))
		}
		for i := 0; i < len(handles); i += 2 {
			w.Cancel(handles[i])
		}
		w.Advance(now.Add(5*time.Minute), fire)
	}
	round() // grow the slab
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
		t.Fatalf("%v allocations per round of Add, Cancel and Advance", allocs)
	}
	if w.Len() != 0 {
		t.Fatalf("Len() = %d after every timer was due", w.Len())
	}
}

// TestReleasedValuesAreNotRetained checks that the wheel drops its copy
// of a value once the timer fires or is cancelled, so a T holding
// pointers does not keep their targets alive.
func TestReleasedValuesAreNotRetained(t *testing.T) {
	type payload = [1 << 10]byte
	w := newWheel[*payload](t, small, epoch0)
	add := func(tick int64) (Timer, weak.Pointer[payload]) {
		v := new(payload)
		return w.Add(atTick(small, tick), v), weak.Make(v)
	}
	h, cancelled := add(5)
	_, fired := add(5)
	_, pending := add(50)
	w.Cancel(h)
	w.Advance(atTick(small, 10), func(time.Time, *payload) {})
	runtime.GC()
	for _, c := range []struct {
		name  string
		ref   weak.Pointer[payload]
		alive bool
	}{{"cancelled", cancelled, false}, {"fired", fired, false}, {"pending", pending, true}} {
		if alive := c.ref.Value() != nil; alive != c.alive {
			t.Errorf("%s value alive = %v, want %v", c.name, alive, c.alive)
		}
	}
	runtime.KeepAlive(w)
}

// TestCompaction cancels most of a large bucket, between advances and
// from a fire callback while the ready list is being fired, and checks
// that the survivors keep their order and the chunks are reclaimed.
func TestCompaction(t *testing.T) {
	t.Parallel()
	const n = 10 * chunkItems
	type testCase struct {
		name   string
		due    int64 // of the crowd: a wheel bucket, or the ready list when past
		inFire bool  // cancel from the first timer's fire callback
		order  []int // of the cancels
	}
	var cases []testCase
	for _, order := range []struct {
		name    string
		indices []int
	}{
		{"ascending", slices.Collect(func(yield func(int) bool) {
			for i := 0; i < n && yield(i); i++ {
			}
		})},
		{"random", rand.New(rand.NewPCG(1, 1)).Perm(n)},
	} {
		cases = append(cases,
			testCase{"wheel bucket/" + order.name, 40, false, order.indices},
			testCase{"ready list/" + order.name, -1, false, order.indices},
			testCase{"ready list while firing/" + order.name, 40, true, order.indices})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWheel[int](t, small, epoch0)
			w.Advance(atTick(small, 1), func(time.Time, int) {})
			handles := make([]Timer, n)
			for i := range handles {
				handles[i] = w.Add(atTick(small, tc.due), i)
			}
			// Keep every fifth timer, the first among them.
			cancelRest := func() {
				for _, i := range tc.order {
					if i%5 != 0 {
						if _, ok := w.Cancel(handles[i]); !ok {
							t.Fatalf("Cancel(%d) failed", i)
						}
						mustVerify(t, w)
					}
				}
				if used := len(w.chunks) - freeChunks(w); used > n/5/chunkItems+2 {
					t.Fatalf("%d chunks in use for %d timers", used, n/5)
				}
			}
			if !tc.inFire {
				cancelRest()
			}
			var fired []int
			w.Advance(atTick(small, 50), func(_ time.Time, v int) {
				if v == 0 && tc.inFire {
					cancelRest()
				}
				fired = append(fired, v)
			})
			if len(fired) != n/5 || !slices.IsSorted(fired) || fired[0] != 0 || fired[len(fired)-1] != n-5 {
				t.Fatalf("fired %v, want every fifth of 0..%d in order", fired, n-1)
			}
			mustVerify(t, w)
		})
	}
}

func freeChunks[T any](w *Wheel[T]) int {
	n := 0
	for c := w.freeChunk; c != none; c = w.chunks[c].next {
		n++
	}
	return n
}

// TestChurnStaysBounded adds and cancels a million timers without moving
// time: stale handles must not pile up in the buckets.
func TestChurnStaysBounded(t *testing.T) {
	t.Parallel()
	w := newWheel[int](t, Config{}, epoch0)
	rng := rand.New(rand.NewPCG(3, 4))
	handles := make([]Timer, 1000)
	for i := range handles {
		handles[i] = w.Add(epoch0.Add(time.Duration(rng.Int64N(int64(30*time.Minute)))), i)
	}
	for i := range 1_000_000 {
		j := rng.IntN(len(handles))
		if _, ok := w.Cancel(handles[j]); !ok {
			t.Fatalf("Cancel of a pending timer failed")
		}
		handles[j] = w.Add(epoch0.Add(time.Duration(rng.Int64N(int64(30*time.Minute)))), i)
	}
	mustVerify(t, w)
	// Each non-empty bucket has a partly used tail chunk; compaction
	// keeps the rest at most half stale.
	if limit := 2*len(handles)/chunkItems + len(w.buckets); len(w.chunks) > limit {
		t.Fatalf("%d chunks for %d pending timers, want at most %d", len(w.chunks), len(handles), limit)
	}
}

func TestGrowAvoidsAllocation(t *testing.T) {
	const n = 10_000
	w := newWheel[uint64](t, Config{}, epoch0)
	w.Grow(2 * n) // AllocsPerRun runs its function twice
	rng := rand.New(rand.NewPCG(5, 6))
	dues := make([]time.Time, n)
	for i := range dues {
		dues[i] = epoch0.Add(time.Duration(rng.Int64N(int64(time.Hour))))
	}
	allocs := testing.AllocsPerRun(1, func() {
		for i, due := range dues {
			w.Add(due, uint64(i))
		}
	})
	if allocs != 0 || w.Len() != 2*n {
		t.Fatalf("%v allocations adding %d timers after Grow(%d); Len %d", allocs, n, 2*n, w.Len())
	}
	mustVerify(t, w)
}

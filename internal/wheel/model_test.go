package wheel

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var (
	modelOps  = flag.Int("wheel.ops", 0, "operations per configuration in TestWheelMatchesReference (0: a default sized for the race detector)")
	modelSeed = flag.Uint64("wheel.seed", 0, "run TestWheelMatchesReference with this seed only (0: the fixed seeds)")
)

// lockstep drives a wheel and the reference model with the same
// operations and fails on the first difference: a value fired out of
// order, a wrong due, a Cancel result, Len, Now, or a NextExpiry later
// than the next firing tick.
type lockstep struct {
	fatalf  func(format string, args ...any)
	w       *Wheel[uint64]
	m       *refModel
	handles []Timer // by model id
	ops     int     // Add, Cancel and Advance calls made
	onFire  func(id int)
}

func newLockstep(fatalf func(string, ...any), cfg Config, start time.Time) *lockstep {
	w, err := New[uint64](cfg, start)
	if err != nil {
		fatalf("New(%+v): %v", cfg, err)
	}
	return &lockstep{fatalf: fatalf, w: w, m: newRefModel(w.Now(), cfg.Tick)}
}

func (h *lockstep) add(due time.Time) int {
	id := h.m.add(due)
	h.handles = append(h.handles, h.w.Add(due, uint64(id)))
	h.ops++
	return id
}

// cancel cancels timer id, or the zero Timer for id -1.
func (h *lockstep) cancel(id int) {
	var t Timer
	if id >= 0 {
		t = h.handles[id]
	}
	want := h.m.cancel(id)
	v, got := h.w.Cancel(t)
	h.ops++
	if got != want || (got && v != uint64(id)) {
		h.fatalf("Cancel(timer %d) = (%d, %v), want ok=%v", id, v, got, want)
	}
}

func (h *lockstep) advance(now time.Time) {
	target := h.m.tickOf(now)
	h.ops++
	h.w.Advance(now, func(due time.Time, v uint64) {
		id, ok := h.m.pop(target)
		if !ok {
			h.fatalf("Advance(tick %d) fired timer %d; the reference fires nothing more", target, v)
		}
		if v != uint64(id) {
			h.fatalf("Advance(tick %d) fired timer %d (due %v), want timer %d (due %v)",
				target, v, h.dueOf(int(v)), id, h.dueOf(id))
		}
		if want := h.dueOf(id); !due.Equal(want) {
			h.fatalf("timer %d fired with due %v, want %v", id, due, want)
		}
		if got, want := h.w.Now(), h.m.timeOfTick(h.m.cur); !got.Equal(want) {
			h.fatalf("Now() while firing timer %d = %v, want %v", id, got, want)
		}
		if h.w.Len() != h.m.pending {
			h.fatalf("Len() while firing = %d, want %d", h.w.Len(), h.m.pending)
		}
		if h.onFire != nil {
			h.onFire(id)
		}
	})
	if id, ok := h.m.pop(target); ok {
		h.fatalf("Advance(tick %d) did not fire timer %d (due %v)", target, id, h.dueOf(id))
	}
	h.m.cur = max(h.m.cur, target)
	h.check()
}

func (h *lockstep) dueOf(id int) time.Time {
	return h.m.epoch.Add(time.Duration(h.m.timers[id].due))
}

// check compares Len, Now and NextExpiry with the reference.
func (h *lockstep) check() {
	if got, want := h.w.Len(), h.m.pending; got != want {
		h.fatalf("Len() = %d, want %d", got, want)
	}
	now := h.w.Now()
	if want := h.m.timeOfTick(h.m.cur); !now.Equal(want) {
		h.fatalf("Now() = %v, want %v", now, want)
	}
	wake, ok := h.w.NextExpiry()
	next, pending := h.m.next()
	switch {
	case ok != pending:
		h.fatalf("NextExpiry() ok = %v with %d pending", ok, h.m.pending)
	case !ok:
	case wake.After(h.m.timeOfTick(next.fireTick)):
		h.fatalf("NextExpiry() = %v, after the next firing tick %v (timer %d)",
			wake, h.m.timeOfTick(next.fireTick), next.id)
	case wake.Before(now):
		h.fatalf("NextExpiry() = %v, before Now() %v", wake, now)
	}
}

// modelConfigs cover tiny wheels, where cascades, top-level turns and
// timers beyond the span are frequent, an odd tick, and the default.
var modelConfigs = []Config{
	{Tick: time.Millisecond, SlotsPerLevel: 2, Levels: 4},
	{Tick: time.Millisecond, SlotsPerLevel: 4, Levels: 3},
	{Tick: 3 * time.Millisecond, SlotsPerLevel: 8, Levels: 2},
	{Tick: time.Microsecond, SlotsPerLevel: 64, Levels: 3},
	{Tick: time.Millisecond, SlotsPerLevel: 64, Levels: 1},
	{Tick: time.Millisecond, SlotsPerLevel: 4096, Levels: 2},
	{},
}

// TestWheelMatchesReference runs seeded random mixes of Add (past, this
// tick, near, on level boundaries, within and beyond the span, centuries
// away), Cancel (pending, fired, cancelled and zero handles, including
// stale handles whose slot holds a newer timer) and Advance (same tick,
// small steps, to boundaries, big jumps, backwards, to NextExpiry), with
// fire callbacks that add and cancel, against the reference model.
func TestWheelMatchesReference(t *testing.T) {
	ops := *modelOps
	if ops == 0 {
		ops = defaultModelOps
	}
	seeds := []uint64{1, 2}
	if *modelSeed != 0 {
		seeds = []uint64{*modelSeed}
	}
	total := 0
	for _, cfg := range modelConfigs {
		for _, seed := range seeds {
			cfg.ensureDefaults()
			name := fmt.Sprintf("tick=%v/slots=%d/levels=%d/seed=%d", cfg.Tick, cfg.SlotsPerLevel, cfg.Levels, seed)
			t.Run(name, func(t *testing.T) {
				r := newRandomRun(t, cfg, seed)
				r.run(t, ops)
				total += r.ops
				t.Logf("%d operations, %d timers fired, %d pending at the end, mean %.0f max %d", r.ops, r.fired, r.w.Len(), float64(r.lenSum)/float64(r.ops), r.lenMax)
			})
		}
	}
	t.Logf("%d operations in total", total)
}

type randomRun struct {
	*lockstep
	cfg      Config
	seed     uint64
	rng      *rand.Rand
	slotBits uint
	levels   int
	slots    int64
	span     int64 // ticks; capped so arithmetic stays far from overflow
	tick     int64
	now      time.Time // latest time advanced to
	fired    int
	lenSum   int
	lenMax   int
	hugeLeft int // timers centuries away still allowed: each costs a move per turn
}

func newRandomRun(t *testing.T, cfg Config, seed uint64) *randomRun {
	bitsPerLevel := slotBits(cfg.SlotsPerLevel)
	r := &randomRun{
		cfg:      cfg,
		seed:     seed,
		rng:      rand.New(rand.NewPCG(seed, uint64(cfg.SlotsPerLevel))),
		slotBits: bitsPerLevel,
		levels:   cfg.Levels,
		slots:    int64(cfg.SlotsPerLevel),
		span:     int64(1) << min(uint(cfg.Levels)*bitsPerLevel, 40),
		tick:     int64(cfg.Tick),
		hugeLeft: 8,
	}
	r.restart(t)
	return r
}

// restart replaces the wheel and the reference with fresh ones, keeping
// the operation count: used at the start and whenever the clock nears
// the end of the int64 nanoseconds that times are computed in.
func (r *randomRun) restart(t *testing.T) {
	start := epoch0.Add(time.Duration(r.seed%7) * r.cfg.Tick / 3) // not tick-aligned
	ops := 0
	if r.lockstep != nil {
		ops = r.ops
	}
	r.lockstep = newLockstep(func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, operation %d: %s", r.seed, r.ops, fmt.Sprintf(format, args...))
	}, r.cfg, start)
	r.ops = ops
	r.now = r.w.Now()
	r.onFire = r.fireAction
}

func (r *randomRun) run(t *testing.T, ops int) {
	for r.ops < ops {
		if r.m.cur > (1<<62)/r.tick-16*r.span {
			r.restart(t)
		}
		r.lenSum += r.w.Len()
		r.lenMax = max(r.lenMax, r.w.Len())
		switch n := r.rng.IntN(100); {
		case r.w.Len() > 20000:
			r.advance(r.now.Add(time.Duration(r.ticks(r.span) * r.tick)))
		case n < 44:
			r.add(r.pickDue())
		case n == 44:
			r.burst()
		case n < 61:
			r.cancel(r.pickID())
		case n == 61:
			r.cancelRecent()
		case n < 92:
			r.advanceTo(r.pickNow())
		case n == 92:
			r.upcoming(r.w.Now().Add(time.Duration(r.ticks(2*r.slots)*r.tick + r.subTick())))
		default:
			if wake, ok := r.w.NextExpiry(); ok {
				r.advanceTo(wake)
			}
		}
		if r.ops%1024 == 0 {
			if err := r.w.verify(); err != nil {
				r.fatalf("%v", err)
			}
		}
	}
	if err := r.w.verify(); err != nil {
		r.fatalf("%v", err)
	}
}

// upcoming checks Upcoming(until) against the reference: the pending
// timers due after the current tick and at or before until, up to the
// end of the lowest level's turn, each once with its due, by due tick.
func (h *lockstep) upcoming(until time.Time) {
	last := min(h.m.tickOf(until), h.m.cur|h.w.slotMask)
	var want []int
	for _, it := range h.m.order {
		tm := h.m.timers[it.id]
		if d := max(tm.due, -1) / h.m.tick; tm.state == refPending && d > h.m.cur && d <= last {
			want = append(want, it.id)
		}
	}
	var got []int
	prev := int64(math.MinInt64)
	through := h.w.Upcoming(until, func(due time.Time, v uint64) {
		if !due.Equal(h.dueOf(int(v))) {
			h.fatalf("Upcoming gave timer %d with due %v, want %v", v, due, h.dueOf(int(v)))
		}
		if d := h.m.tickOf(due); d < prev {
			h.fatalf("Upcoming gave timer %d (tick %d) after one of tick %d", v, d, prev)
		} else {
			prev = d
		}
		got = append(got, int(v))
	})
	if wantThrough := h.m.timeOfTick(max(last, h.m.cur)); !through.Equal(wantThrough) {
		h.fatalf("Upcoming(%v) at tick %d covered through %v, want %v", until, h.m.cur, through, wantThrough)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		h.fatalf("Upcoming(%v) at tick %d gave timers %v, want %v", until, h.m.cur, got, want)
	}
	h.ops++
}

func (r *randomRun) advanceTo(now time.Time) {
	r.advance(now)
	if now.After(r.now) {
		r.now = now
	}
}

// ticks returns a random duration in ticks in [0, n).
func (r *randomRun) ticks(n int64) int64 { return r.rng.Int64N(max(n, 1)) }

// subTick returns a random offset within a tick.
func (r *randomRun) subTick() int64 { return r.rng.Int64N(r.tick) }

// at returns the time of tick plus a sub-tick offset in nanoseconds.
func (r *randomRun) at(tick, sub int64) time.Time {
	return r.m.epoch.Add(time.Duration(tick*r.tick + sub))
}

// boundary returns a tick on a random level boundary just ahead of cur.
func (r *randomRun) boundary() int64 {
	level := 1 + r.rng.IntN(r.levels)
	size := int64(1) << min(uint(level)*r.slotBits, 40)
	return (r.m.cur/size+1+r.ticks(2))*size + r.ticks(3) - 1
}

func (r *randomRun) pickDue() time.Time {
	cur := r.m.cur
	switch n := r.rng.IntN(100); {
	case n < 8: // in the past, possibly before the epoch
		return r.at(cur, -1-r.ticks(3*r.span*r.tick))
	case n < 16: // within the current tick
		return r.at(cur, r.subTick())
	case n < 40:
		return r.at(cur+1+r.ticks(2*r.slots), r.subTick())
	case n < 60:
		return r.at(r.boundary(), r.subTick())
	case n < 90:
		return r.at(cur+1+r.ticks(r.span), r.subTick())
	case n < 99 || r.hugeLeft == 0: // beyond the span
		return r.at(cur+r.span+r.ticks(4*r.span), r.subTick())
	default:
		r.hugeLeft--
		if r.rng.IntN(2) == 0 {
			return r.m.epoch.AddDate(200, 0, 0)
		}
		return r.m.epoch.AddDate(500, 0, 0) // saturates
	}
}

// burst adds dozens of timers due in one tick, so that one bucket holds
// several chunks.
func (r *randomRun) burst() {
	start := r.pickDue().Truncate(time.Duration(r.tick)) // the epoch is tick-aligned too
	for range 32 + r.rng.IntN(64) {
		r.add(start.Add(time.Duration(r.subTick())))
	}
}

// cancelRecent cancels the latest handles in random order: after a
// burst, enough of one bucket's to make it compact.
func (r *randomRun) cancelRecent() {
	n := len(r.handles)
	for _, i := range r.rng.Perm(min(n, 100)) {
		r.cancel(n - 1 - i)
	}
}

// pickID returns a handle to cancel: mostly recent ones, which are
// likely pending, sometimes any one (likely fired or cancelled, and its
// slot reused), and sometimes the zero Timer (-1).
func (r *randomRun) pickID() int {
	n := len(r.handles)
	switch k := r.rng.IntN(10); {
	case n == 0 || k == 0:
		return -1
	case k < 7:
		return n - 1 - r.rng.IntN(min(n, 64))
	default:
		return r.rng.IntN(n)
	}
}

func (r *randomRun) pickNow() time.Time {
	switch n := r.rng.IntN(100); {
	case n < 10:
		return r.now
	case n < 18: // backwards: nothing happens
		return r.now.Add(-time.Duration(1 + r.ticks(r.slots*r.tick)))
	case n < 33: // to just before, on or just after a level boundary
		level := min(max(1, (r.exponent()+int(r.slotBits)-1)/int(r.slotBits)), r.levels)
		size := int64(1) << min(uint(level)*r.slotBits, 40)
		return r.at((r.m.cur/size+1)*size+r.ticks(3)-1, r.subTick())
	default:
		return r.now.Add(time.Duration(r.ticks(int64(1)<<r.exponent())*r.tick + r.subTick()))
	}
}

// exponent returns e with probability proportional to 2^(-e/2), up to
// log2(span)+3: advancing by up to 2^e ticks moves time mostly by small
// steps and rarely by whole spans, so timers pile up across every level
// between the jumps that fire them all at once.
func (r *randomRun) exponent() int {
	top := int(min(uint(r.levels)*r.slotBits, 40)) + 3
	e := 0
	for e < top && r.rng.Float64() < math.Sqrt2/2 {
		e++
	}
	return e
}

// fireAction runs inside the fire callback: it adds timers due now, in
// the past, soon (likely before the target) and later, and cancels
// timers that may be in the batch being fired, in a bucket due later in
// this Advance, or long gone.
func (r *randomRun) fireAction(id int) {
	r.fired++
	switch n := r.rng.IntN(100); {
	case n < 3:
		r.add(r.at(r.m.cur, r.subTick()))
	case n < 5:
		r.add(r.at(r.m.cur-r.ticks(r.slots), r.subTick()))
	case n < 9:
		r.add(r.at(r.m.cur+1+r.ticks(r.slots*r.slots), r.subTick()))
	case n < 11:
		r.add(r.pickDue())
	case n < 15:
		r.cancel(r.pickID())
	case n < 16:
		r.cancel(id) // already fired
	case n == 16 && r.rng.IntN(4) == 0:
		r.cancelRecent() // may compact the ready list while it fires
	}
}

// TestWheelRapid is a state-machine version of the model test at small
// scale, where rapid shrinks a failure to a minimal sequence.
func TestWheelRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := Config{
			Tick:          rapid.SampledFrom([]time.Duration{time.Millisecond, 3 * time.Millisecond}).Draw(rt, "tick"),
			SlotsPerLevel: rapid.SampledFrom([]int{2, 4, 8}).Draw(rt, "slots"),
			Levels:        rapid.IntRange(1, 3).Draw(rt, "levels"),
		}
		span := int64(1) << (uint(cfg.Levels) * slotBits(cfg.SlotsPerLevel))
		tick := int64(cfg.Tick)
		h := newLockstep(rt.Fatalf, cfg, epoch0)
		at := func(ticks, sub int64) time.Time {
			return h.m.epoch.Add(time.Duration(ticks*tick + sub))
		}
		drawAdd := func(rt *rapid.T) {
			offset := rapid.Int64Range(-2*span, 4*span).Draw(rt, "due offset")
			sub := rapid.Int64Range(0, tick-1).Draw(rt, "due sub-tick")
			h.add(at(h.m.cur+offset, sub))
		}
		h.onFire = func(int) {
			switch rapid.IntRange(0, 9).Draw(rt, "in fire") {
			case 0:
				drawAdd(rt)
			case 1:
				h.cancel(rapid.IntRange(-1, len(h.handles)-1).Draw(rt, "cancel in fire"))
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"add": drawAdd,
			"cancel": func(rt *rapid.T) {
				h.cancel(rapid.IntRange(-1, len(h.handles)-1).Draw(rt, "timer"))
			},
			"advance": func(rt *rapid.T) {
				ticks := rapid.Int64Range(-2, 3*span).Draw(rt, "advance ticks")
				h.advance(at(h.m.cur+ticks, rapid.Int64Range(0, tick-1).Draw(rt, "advance sub-tick")))
			},
			"advance to NextExpiry": func(rt *rapid.T) {
				if wake, ok := h.w.NextExpiry(); ok {
					h.advance(wake)
				}
			},
			"": func(rt *rapid.T) {
				h.check()
				if err := h.w.verify(); err != nil {
					rt.Fatal(err)
				}
			},
		})
	})
}

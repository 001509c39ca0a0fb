package wheel

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// The benchmarks compare the wheel with Go's runtime timers
// (time.AfterFunc) at the same numbers of pending timers. Every ns/op is
// per timer:
//
//   - add: Add (AfterFunc) while filling an empty wheel (timer heap) to
//     the pending count, growth included;
//   - add+cancel: Add then Cancel of that timer (AfterFunc then Stop),
//     with `pending` timers in place;
//   - churn: Add, then Cancel of a random pending timer, with `pending`
//     timers in place: the cancel misses the caches, as a client's would;
//   - fire: per timer fired, with `pending` timers due over the
//     scheduler's 30-minute horizon and the wheel advanced one tick at a
//     time; the runtime fires timers due at one instant (see
//     benchRuntimeFire).
//
// B/timer is the live heap per pending timer, measured after a GC with
// exactly `pending` timers in place, the handles' slice excluded. The
// sub-benchmarks run rounds of at most `pending` timers; with
// -benchtime set to a count (10000000x) each runs that many operations.
//
//	go test -run '^$' -bench 'Wheel|RuntimeTimer' -benchtime 10000000x ./internal/wheel/

var benchSizes = []int{1_000_000, 10_000_000}

// benchHorizon is the scheduler's default horizon: wheel timers are due
// within it, as in the scheduler.
const benchHorizon = 30 * time.Minute

// runtimeDelay keeps runtime timers that must not fire beyond the
// benchmark's duration.
const runtimeDelay = time.Hour

// benchRand is a xorshift generator, cheap enough not to weigh on the
// operations measured.
type benchRand uint64

func (r *benchRand) next() uint64 {
	*r ^= *r << 13
	*r ^= *r >> 7
	*r ^= *r << 17
	return uint64(*r)
}

// within returns a random duration in [0, d).
func (r *benchRand) within(d time.Duration) time.Duration {
	return time.Duration(r.next() % uint64(d))
}

// liveBytes returns the growth of the live heap across build.
func liveBytes(build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// inRounds runs ops operations in rounds of at most n, with setup and
// teardown untimed around each timed round.
func inRounds(b *testing.B, n int, setup func(k int), timed func(k int) int, teardown func()) {
	for done := 0; done < b.N; {
		k := min(n, b.N-done)
		b.StopTimer()
		setup(k)
		b.StartTimer()
		done += timed(k)
		b.StopTimer()
		teardown()
		b.StartTimer()
	}
}

func BenchmarkWheel(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			benchWheel(b, n)
		})
	}
}

func fillWheel(b *testing.B, n int, rng *benchRand, handles []Timer) *Wheel[uint64] {
	w := newWheel[uint64](b, Config{}, epoch0)
	for i := range n {
		t := w.Add(epoch0.Add(rng.within(benchHorizon)), uint64(i))
		if handles != nil {
			handles[i] = t
		}
	}
	return w
}

func benchWheel(b *testing.B, n int) {
	rng := benchRand(88172645463325252)
	handles := make([]Timer, n)
	var steady *Wheel[uint64]
	perTimer := liveBytes(func() any {
		steady = fillWheel(b, n, &rng, handles)
		return steady
	}) / float64(n)

	b.Run("add", func(b *testing.B) {
		var w *Wheel[uint64]
		b.ReportAllocs()
		inRounds(b, n,
			func(int) { w = newWheel[uint64](b, Config{}, epoch0) },
			func(k int) int {
				for i := range k {
					w.Add(epoch0.Add(rng.within(benchHorizon)), uint64(i))
				}
				return k
			},
			func() { w = nil })
		b.ReportMetric(perTimer, "B/timer")
	})

	b.Run("add+cancel", func(b *testing.B) {
		// Each op adds a timer and cancels it, with n pending.
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			t := steady.Add(epoch0.Add(rng.within(benchHorizon)), uint64(i))
			if _, ok := steady.Cancel(t); !ok {
				b.Fatal("Cancel of a pending timer failed")
			}
		}
		b.StopTimer()
		b.ReportMetric(perTimer, "B/timer")
	})

	b.Run("churn", func(b *testing.B) {
		// Each op adds a timer and cancels a random pending one, so n stay
		// pending: the cancel finds its timer anywhere in memory.
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			t := steady.Add(epoch0.Add(rng.within(benchHorizon)), uint64(i))
			j := rng.next() % uint64(n)
			if _, ok := steady.Cancel(handles[j]); !ok {
				b.Fatal("Cancel of a pending timer failed")
			}
			handles[j] = t
		}
		b.StopTimer()
		if steady.Len() != n {
			b.Fatalf("Len() = %d, want %d", steady.Len(), n)
		}
		b.ReportMetric(perTimer, "B/timer")
	})
	steady, handles = nil, nil

	b.Run("fire", func(b *testing.B) {
		// n timers due over the horizon; the owner advances one tick at a
		// time, as a busy partition loop would, until k have fired.
		var w *Wheel[uint64]
		fired := 0
		fire := func(time.Time, uint64) { fired++ }
		b.ReportAllocs()
		inRounds(b, n,
			func(int) { w = fillWheel(b, n, &rng, nil) },
			func(k int) int {
				fired = 0
				for now := epoch0; fired < k; {
					now = now.Add(DefaultTick)
					w.Advance(now, fire)
				}
				return fired
			},
			func() { w = nil })
		b.ReportMetric(perTimer, "B/timer")
	})
}

func BenchmarkRuntimeTimer(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			benchRuntimeTimer(b, n)
		})
	}
}

func stopAll(timers []*time.Timer) {
	for _, t := range timers {
		if t != nil {
			t.Stop()
		}
	}
	clear(timers)
}

func benchRuntimeTimer(b *testing.B, n int) {
	rng := benchRand(88172645463325252)
	noop := func() {}
	handles := make([]*time.Timer, n)
	fill := func() {
		for i := range handles {
			handles[i] = time.AfterFunc(runtimeDelay+rng.within(benchHorizon), noop)
		}
	}
	perTimer := liveBytes(func() any {
		fill()
		return handles
	}) / float64(n)
	stopAll(handles)

	b.Run("add", func(b *testing.B) {
		b.ReportAllocs()
		inRounds(b, n,
			func(int) {},
			func(k int) int {
				for i := range k {
					handles[i] = time.AfterFunc(runtimeDelay+rng.within(benchHorizon), noop)
				}
				return k
			},
			func() { stopAll(handles) })
		b.ReportMetric(perTimer, "B/timer")
	})

	b.Run("add+cancel", func(b *testing.B) {
		fill()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			t := time.AfterFunc(runtimeDelay+rng.within(benchHorizon), noop)
			if !t.Stop() {
				b.Fatal("Stop of a pending timer failed")
			}
		}
		b.StopTimer()
		stopAll(handles)
		b.ReportMetric(perTimer, "B/timer")
	})

	b.Run("churn", func(b *testing.B) {
		fill()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			t := time.AfterFunc(runtimeDelay+rng.within(benchHorizon), noop)
			j := rng.next() % uint64(n)
			if !handles[j].Stop() {
				b.Fatal("Stop of a pending timer failed")
			}
			handles[j] = t
		}
		b.StopTimer()
		stopAll(handles)
		b.ReportMetric(perTimer, "B/timer")
	})

	b.Run("fire", func(b *testing.B) {
		benchRuntimeFire(b, n, handles, &rng)
		b.ReportMetric(perTimer, "B/timer")
	})
}

// benchRuntimeFire makes k of n pending timers due at one deadline, far
// enough ahead to create them all first, and times from the deadline
// until the last of them has run. The result replaces ns/op: the
// framework's own clock also counts the sleep's wake-up latency. A round
// whose creation overruns the deadline is retried with more margin.
func benchRuntimeFire(b *testing.B, n int, handles []*time.Timer, rng *benchRand) {
	var total time.Duration
	margin := 300 * time.Nanosecond // per timer created
	for done := 0; done < b.N; {
		b.StopTimer()
		k := min(n, b.N-done)
		for i := k; i < n; i++ {
			handles[i] = time.AfterFunc(runtimeDelay+rng.within(benchHorizon), func() {})
		}
		var count atomic.Int64
		finished := make(chan time.Time, 1)
		fire := func() {
			if count.Add(1) == int64(k) {
				finished <- time.Now()
			}
		}
		deadline := time.Now().Add(50*time.Millisecond + time.Duration(k)*margin)
		for i := range k {
			handles[i] = time.AfterFunc(time.Until(deadline), fire)
		}
		if count.Load() != 0 || time.Now().After(deadline) {
			stopAll(handles)
			margin *= 2
			continue
		}
		time.Sleep(time.Until(deadline)) // real timers need real time
		b.StartTimer()
		end := <-finished
		b.StopTimer()
		total += end.Sub(deadline)
		done += k
		stopAll(handles)
		b.StartTimer()
	}
	b.ReportMetric(float64(total)/float64(b.N), "ns/op")
}

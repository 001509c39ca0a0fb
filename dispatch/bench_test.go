package dispatch

import (
	"context"
	"flag"
	"runtime"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// BenchmarkEngine measures submit → handler → completion for b.N tasks
// from one producer with a trivial handler. Compare tasks/s with
// BenchmarkChannelBaseline from the same run.
func BenchmarkEngine(b *testing.B) {
	b.Run("families=1", func(b *testing.B) { benchEngine(b, 1) })
	b.Run("families=10000", func(b *testing.B) { benchEngine(b, 10000) })
	b.Run("uncorrelated", func(b *testing.B) { benchEngine(b, 0) })
}

func benchKey(i, families int) Key {
	if families == 0 {
		return IntKey(-1)
	}
	return IntKey(int64(i%families + 1))
}

func benchEngine(b *testing.B, families int) {
	e, err := New(Config[int]{Handler: func(Task[int]) Result { return Success }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	begin := time.Now()
	for i := range b.N {
		key := benchKey(i, families)
		for e.TrySubmit(key, i) != nil {
			runtime.Gosched()
		}
	}
	waitCompleted(e, uint64(b.N))
	elapsed := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	if err := e.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// waitCompleted polls the counters; benchmarks only, where a per-task
// atomic in the handler would distort what is measured.
func waitCompleted[T any](e *Engine[T], n uint64) {
	for Total(e.Stats()).Completed < n {
		runtime.Gosched()
	}
}

// BenchmarkChannelBaseline moves the same items through one buffered
// channel (as large as the engine's ring) to one consumer goroutine.
func BenchmarkChannelBaseline(b *testing.B) {
	ch := make(chan int, DefaultRingSize)
	done := make(chan int)
	go func() {
		n := 0
		for range ch {
			n++
		}
		done <- n
	}()
	b.ReportAllocs()
	b.ResetTimer()
	begin := time.Now()
	for i := range b.N {
		ch <- i
	}
	close(ch)
	<-done
	elapsed := time.Since(begin)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
}

var latencyRate = flag.Float64("dispatch.rate", 1_000_000, "tasks per second offered by the latency benchmarks")

// BenchmarkEngineLatency offers tasks over 10,000 families at a fixed rate
// (-dispatch.rate) from one producer and reports the time from each task's
// scheduled submit instant to its handler starting, in microseconds.
// Measuring from the schedule rather than the actual submit keeps a
// stalled producer from hiding latency (coordinated omission).
func BenchmarkEngineLatency(b *testing.B) {
	var lat []int64
	var clock pacer
	e, err := New(Config[int]{Handler: func(t Task[int]) Result {
		lat[t.Value()] = clock.late(t.Value())
		return Success
	}})
	if err != nil {
		b.Fatal(err)
	}
	lat = make([]int64, b.N)
	clock.run(b, func(i int) {
		for e.TrySubmit(benchKey(i, 10000), i) != nil {
			runtime.Gosched()
		}
	})
	waitCompleted(e, uint64(b.N))
	clock.report(b, lat)
	if err := e.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkChannelLatency is BenchmarkEngineLatency's baseline: the same
// paced producer feeding one buffered channel read by one goroutine.
func BenchmarkChannelLatency(b *testing.B) {
	lat := make([]int64, b.N)
	var clock pacer
	ch := make(chan int, DefaultRingSize)
	done := make(chan struct{})
	go func() {
		for i := range ch {
			lat[i] = clock.late(i)
		}
		close(done)
	}()
	clock.run(b, func(i int) { ch <- i })
	close(ch)
	<-done
	clock.report(b, lat)
}

// pacer schedules item i at base + i/rate.
type pacer struct {
	base     time.Time
	interval time.Duration
}

func (c *pacer) run(b *testing.B, submit func(i int)) {
	c.interval = time.Duration(float64(time.Second) / *latencyRate)
	b.ResetTimer()
	c.base = time.Now()
	for i := range b.N {
		for time.Since(c.base) < time.Duration(i)*c.interval {
			runtime.Gosched() // yield so consumers on this P can run
		}
		submit(i)
	}
}

// late returns how long after its scheduled instant item i is seen.
func (c *pacer) late(i int) int64 {
	return int64(time.Since(c.base) - time.Duration(i)*c.interval)
}

func (c *pacer) report(b *testing.B, lat []int64) {
	elapsed := time.Since(c.base)
	b.StopTimer()
	h := hdrhistogram.New(1, int64(10*time.Second), 3)
	for _, ns := range lat {
		_ = h.RecordValue(max(ns, 1))
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(h.ValueAtQuantile(50))/1e3, "p50-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99))/1e3, "p99-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99.9))/1e3, "p99.9-µs")
}

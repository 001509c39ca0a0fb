package scheduler

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

var (
	benchCallers    = flag.Int("scheduler.callers", 256, "concurrent callers in BenchmarkRegister")
	benchPartitions = flag.Int("scheduler.partitions", 0, "Config.Partitions in BenchmarkRegister (0: the default)")
	benchBatchers   = flag.Int("scheduler.batchers", 16, "callers registering batches in BenchmarkRegisterBatch and BenchmarkRegisterBatchReplicated")
	benchBatch      = flag.Int("scheduler.batch", 100, "tasks a batch in BenchmarkRegisterBatch")
)

// benchScheduler runs a scheduler on the real clock and a store in a temp
// dir, delivering everything at once.
func benchScheduler(b *testing.B, tune func(*Config)) (*Scheduler, *store.Store) {
	b.Helper()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Store: st, Deliverer: DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })}
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			b.Error(err)
		}
		if err := st.Close(); err != nil {
			b.Error(err)
		}
	})
	return s, st
}

// BenchmarkRegister measures durable registrations: many callers each
// register a task with a 256-byte payload due in an hour and wait for its
// acknowledgement, which comes only after the record is synced. It reports
// registrations per second, the time to acknowledgement and how many
// registrations each fsync covered.
func BenchmarkRegister(b *testing.B) {
	for _, groups := range []int{0, 1000} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) { benchRegister(b, groups) })
	}
}

func benchRegister(b *testing.B, groups int) {
	s, st := benchScheduler(b, func(c *Config) { c.Partitions = *benchPartitions })
	payload := make([]byte, 256)
	callers := *benchCallers
	var next atomic.Int64
	// The callers' histograms (200 kB each) and the group names are made
	// before the clock starts, so that their cost is not counted as the
	// registrations'.
	hists := make([]*hdrhistogram.Histogram, callers)
	for c := range hists {
		hists[c] = hdrhistogram.New(1, int64(10*time.Second), 3)
	}
	names := make([]string, groups)
	for g := range names {
		names[g] = fmt.Sprint("g", g)
	}
	before := st.Stats()
	b.ResetTimer()
	begin, cpu0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				req := RegisterRequest{Client: "bench", Payload: payload, Delay: time.Hour}
				if groups > 0 {
					req.Group = names[i%int64(groups)]
				}
				t0 := time.Now()
				if _, _, err := s.Register(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
				_ = hists[c].RecordValue(int64(time.Since(t0)))
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(begin), cpuTime()-cpu0
	b.StopTimer()
	h := hists[0]
	for _, o := range hists[1:] {
		h.Merge(o)
	}
	after := st.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "regs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/reg")
	b.ReportMetric(float64(h.ValueAtQuantile(50))/1e3, "p50-µs")
	b.ReportMetric(float64(h.ValueAtQuantile(99))/1e3, "p99-µs")
	if syncs := after.WALSyncs - before.WALSyncs; syncs > 0 {
		b.ReportMetric(float64(b.N)/float64(syncs), "regs/fsync")
	}
	// Bytes written a registration: to the write-ahead log, and to
	// sstables by flushes and the compactions done within the run.
	b.ReportMetric(float64(after.WALBytes-before.WALBytes)/float64(b.N), "wal-B/reg")
	sst := after.FlushedBytes + after.CompactedBytes - before.FlushedBytes - before.CompactedBytes
	b.ReportMetric(float64(sst)/float64(b.N), "sst-B/reg")
}

// BenchmarkRegisterBatch is BenchmarkRegister's load in batches, in
// process: -scheduler.batchers callers each register batches of
// -scheduler.batch tasks (256-byte payloads due in an hour) with
// RegisterBatch and wait for each batch, as a program that embeds the
// scheduler, or a server's reader, registers what it has at hand.
func BenchmarkRegisterBatch(b *testing.B) {
	for _, groups := range []int{0, 1000} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) { benchRegisterBatch(b, groups) })
	}
}

func benchRegisterBatch(b *testing.B, groups int) {
	s, _ := benchScheduler(b, func(c *Config) { c.Partitions = *benchPartitions })
	payload := make([]byte, 256)
	b.ResetTimer()
	begin, cpu0 := time.Now(), cpuTime()
	batchLoad(b, *benchBatchers, int64(*benchBatch), func(_ int, first int64, batch []RegisterRequest) {
		for i := range batch {
			batch[i] = RegisterRequest{Client: "bench", Payload: payload, Delay: time.Hour}
			if groups > 0 {
				batch[i].Group = fmt.Sprint("g", (first+int64(i))%int64(groups))
			}
		}
	}, func(_ int, batch []RegisterRequest) ([]RegisterResult, error) {
		return s.RegisterBatch(context.Background(), batch)
	})
	elapsed, cpu := time.Since(begin), cpuTime()-cpu0
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/task")
}

// batchLoad registers b.N tasks from callers goroutines, in batches of
// perBatch: fill makes caller's batch, whose first task is the first-th,
// and register sends it and waits for its answers. It returns once every
// batch is answered, or after the first error.
func batchLoad(b *testing.B, callers int, perBatch int64, fill func(caller int, first int64, batch []RegisterRequest),
	register func(caller int, batch []RegisterRequest) ([]RegisterResult, error)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for caller := range callers {
		wg.Go(func() {
			reqs := make([]RegisterRequest, perBatch)
			for {
				first := next.Add(perBatch) - perBatch
				if first >= int64(b.N) {
					return
				}
				batch := reqs[:min(perBatch, int64(b.N)-first)]
				fill(caller, first, batch)
				results, err := register(caller, batch)
				for _, r := range results {
					err = cmp.Or(err, r.Err)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// bulkLoad writes n ungrouped tasks straight into st, in big batches, with
// due times from due(i), each on the next shard; it is setup for the
// recovery and firing benchmarks, not a measured path.
func bulkLoad(b *testing.B, st *store.Store, n int, due func(i int) int64) {
	b.Helper()
	bulkLoadGroups(b, st, n, 0, 1, due)
}

// bulkLoadGroups is bulkLoad with the tasks spread over groups (0: none),
// or, ungrouped, with runs of run consecutive tasks on one shard, as
// tasks registered together are placed.
func bulkLoadGroups(b *testing.B, st *store.Store, n, groups, run int, due func(i int) int64) {
	b.Helper()
	payload := make([]byte, 64)
	const perBatch = 10000
	ids := map[uint16]uint64{}
	for start := 0; start < n; start += perBatch {
		batch := st.NewBatch()
		for i := start; i < min(n, start+perBatch); i++ {
			shard, group := uint16(i/run%st.Shards()), ""
			if groups > 0 {
				group = fmt.Sprint("g", i%groups)
				shard = st.GroupShard("bench", group)
			}
			ids[shard]++
			id := store.MakeID(shard, ids[shard])
			batch.PutTask(&storepb.Task{Id: id, Seq: id, Client: "bench", Group: group, Payload: payload,
				DueMs: due(i), Mode: storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR})
		}
		for shard, last := range ids {
			batch.PutShardMeta(shard, &storepb.ShardMeta{LastId: last})
		}
		if err := st.Commit(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecovery measures Start on a store holding 1,000,000 pending
// tasks, half due inside the 30-minute horizon: the time to ready, and the
// heap and process RSS once the wheel is rebuilt. BenchmarkRecoveryOverdue
// is the same after a long downtime: every task overdue.
func BenchmarkRecovery(b *testing.B) {
	for _, inHorizon := range []int{500_000, 1_000_000} {
		b.Run(fmt.Sprintf("pending=1000000/inwheel=%d", inHorizon), func(b *testing.B) {
			dir := b.TempDir()
			st, err := store.Open(dir, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			bulkLoad(b, st, 1_000_000, func(i int) int64 {
				if i < inHorizon {
					return now.Add(10*time.Minute + time.Duration(i)*time.Microsecond).UnixMilli()
				}
				return now.Add(2*time.Hour + time.Duration(i)*time.Millisecond).UnixMilli()
			})
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				heapBefore := heapInUse()
				begin := time.Now()
				st, err := store.Open(dir, store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				s, err := New(Config{Store: st, Deliverer: DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })})
				if err == nil {
					err = s.Start(context.Background())
				}
				if err != nil {
					b.Fatal(err)
				}
				ready := time.Since(begin)
				b.StopTimer()
				b.ReportMetric(ready.Seconds(), "s-to-ready")
				b.ReportMetric(float64(heapInUse()-heapBefore)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MiB")
				_ = s.Stop(context.Background())
				_ = st.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRecoveryOverdue starts on 1,000,000 overdue tasks, ungrouped
// or in 1,000 groups, with receivers that never answer (a downtime, then
// a stuck endpoint): what the backlog costs in memory once started.
func BenchmarkRecoveryOverdue(b *testing.B) {
	for _, groups := range []int{0, 1000} {
		b.Run(fmt.Sprintf("overdue=1000000/groups=%d", groups), func(b *testing.B) {
			dir := b.TempDir()
			st, err := store.Open(dir, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			past := time.Now().Add(-time.Hour)
			bulkLoadGroups(b, st, 1_000_000, groups, 1, func(i int) int64 { return past.Add(time.Duration(i) * time.Microsecond).UnixMilli() })
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				heapBefore := heapInUse()
				begin := time.Now()
				st, err := store.Open(dir, store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				s, err := New(Config{Store: st, Deliverer: DelivererFunc(func(Delivery, func(error)) {})})
				if err == nil {
					err = s.Start(context.Background())
				}
				if err != nil {
					b.Fatal(err)
				}
				ready := time.Since(begin)
				b.StopTimer()
				started := int64(DefaultMaxDelivering) // every slot, ungrouped
				if groups > 0 {
					started = int64(groups) // every group's head
				}
				for s.Stats().Delivering < started {
					runtime.Gosched()
				}
				b.ReportMetric(ready.Seconds(), "s-to-ready")
				b.ReportMetric(float64(heapInUse()-heapBefore)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(s.Stats().Waiting), "waiting")
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = s.Stop(ctx) // attempts never end: stop as a crash would
				_ = st.Close()
				b.StartTimer()
			}
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// rssBytes reads the process's resident set size from /proc.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(data), &size, &resident); err != nil {
		return 0
	}
	return resident * int64(os.Getpagesize())
}

var (
	fireRate = flag.Int("scheduler.firerate", 50_000, "fires per second offered by BenchmarkFireLateness")
	fireLead = flag.Duration("scheduler.firelead", 10*time.Second, "how long after the start of its load BenchmarkFireLateness's first task is due")
)

// BenchmarkFireLateness loads tasks due at a steady -scheduler.firerate
// for 10 seconds, starts the scheduler on the real clock, and reports how
// late each delivery attempt starts after its due time (p50, p99, max).
// Due times have millisecond resolution, so a task due at 12 ms fires from
// 12.000 ms on. With run=1 the tasks due together are spread over every
// shard, as the tasks of many groups are; with run=16 runs of 16 share a
// shard, and with run=1024 runs of 1,024, as ungrouped tasks registered
// one after the other do (a partition's stint on a shard, partition.place).
func BenchmarkFireLateness(b *testing.B) {
	for _, run := range []int{1, 16, 1024} {
		b.Run(fmt.Sprintf("run=%d", run), func(b *testing.B) { benchFireLateness(b, run) })
	}
}

func benchFireLateness(b *testing.B, run int) {
	for range b.N {
		n := *fireRate * 10
		st, err := store.Open(b.TempDir(), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now().Add(*fireLead)
		bulkLoadGroups(b, st, n, 0, run, func(i int) int64 {
			return start.Add(time.Duration(i) * time.Second / time.Duration(*fireRate)).UnixMilli()
		})
		if time.Now().After(start) {
			_ = st.Close()
			b.Fatalf("loading took longer than -scheduler.firelead (%v): the first tasks were already due", *fireLead)
		}
		lateness := hdrhistogram.New(1, int64(time.Minute), 3)
		var mu sync.Mutex
		done := make(chan struct{})
		count := 0
		var cpu0, cpu time.Duration
		s, err := New(Config{Store: st, Deliverer: DelivererFunc(func(d Delivery, ack func(error)) {
			late := time.Since(time.UnixMilli(d.Task.DueMs))
			mu.Lock()
			_ = lateness.RecordValue(max(int64(late), 1))
			count++
			switch count {
			case 1:
				cpu0 = cpuTime()
			case n:
				cpu = cpuTime() - cpu0
				close(done)
			}
			mu.Unlock()
			ack(nil)
		})})
		if err == nil {
			err = s.Start(context.Background())
		}
		if err != nil {
			b.Fatal(err)
		}
		<-done
		_ = s.Stop(context.Background())
		_ = st.Close()
		b.ReportMetric(float64(lateness.ValueAtQuantile(50))/1e6, "late-p50-ms")
		b.ReportMetric(float64(lateness.ValueAtQuantile(99))/1e6, "late-p99-ms")
		b.ReportMetric(float64(lateness.Max())/1e6, "late-max-ms")
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/fire")
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFireLatenessBaseline is BenchmarkFireLateness's floor on this
// machine: one goroutine on Go's runtime timer wakes at every millisecond
// boundary for 10 seconds and fires the same number of items per ms,
// recording how late each is. No store, wheel or engine.
func BenchmarkFireLatenessBaseline(b *testing.B) {
	for range b.N {
		perMs := *fireRate / 1000
		lateness := hdrhistogram.New(1, int64(time.Minute), 3)
		start := time.Now().Truncate(time.Millisecond).Add(10 * time.Millisecond)
		timer := time.NewTimer(time.Until(start))
		for ms := range 10_000 {
			due := start.Add(time.Duration(ms) * time.Millisecond)
			timer.Reset(time.Until(due))
			<-timer.C
			for range perMs {
				_ = lateness.RecordValue(max(int64(time.Since(due)), 1))
			}
		}
		b.ReportMetric(float64(lateness.ValueAtQuantile(50))/1e6, "late-p50-ms")
		b.ReportMetric(float64(lateness.ValueAtQuantile(99))/1e6, "late-p99-ms")
		b.ReportMetric(float64(lateness.Max())/1e6, "late-max-ms")
	}
}

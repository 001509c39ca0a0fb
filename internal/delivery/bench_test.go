package delivery

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

var (
	benchTasks = flag.Int("delivery.tasks", 200_000, "tasks per run of BenchmarkThroughput")
	benchRate  = flag.Int("delivery.rate", 20_000, "tasks due per second in BenchmarkLatency and BenchmarkHotGroup")
	benchFor   = flag.Duration("delivery.duration", 10*time.Second, "how long tasks fall due in BenchmarkLatency and BenchmarkHotGroup")
	benchConc  = flag.Int("delivery.concurrent", DefaultMaxConcurrent, "the default pool's MaxConcurrent")
	benchConns = flag.Int("delivery.tcpconns", DefaultTCPConns, "Config.TCPConns")
)

var benchProtocols = []string{"none", "http", "grpc", "tcp", "udp"}

// benchReceiver starts a receiver for protocol on loopback, counting what
// it handles, and returns the callback that reaches it; "none" has no
// receiver (the engine is bypassed).
func benchReceiver(b *testing.B, protocol string, handled *atomic.Int64) (*storepb.Callback, func()) {
	b.Helper()
	h := func(context.Context, *boomerangv1.Delivery) error {
		handled.Add(1)
		return nil
	}
	switch protocol {
	case "none":
		return nil, func() {}
	case "sink":
		return benchSinkCallback, func() {}
	case "http":
		r, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: testSecret, Handler: h})
		if err != nil {
			b.Fatal(err)
		}
		ln := listen(b)
		srv := &http.Server{Handler: r}
		go srv.Serve(ln)
		return httpCallback("http://" + ln.Addr().String() + "/hook"), func() { _ = srv.Close() }
	case "grpc":
		mux := http.NewServeMux()
		mux.Handle(client.NewGRPCReceiver(h).Handler())
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		srv := &http.Server{Handler: mux, Protocols: &protocols}
		ln := listen(b)
		go srv.Serve(ln)
		return grpcCallback(ln.Addr().String()), func() { _ = srv.Close() }
	case "tcp":
		r, err := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: h})
		if err != nil {
			b.Fatal(err)
		}
		ln := listen(b)
		go r.Serve(ln)
		return tcpCallback(ln.Addr().String()), func() { _ = r.Close(context.Background()) }
	case "udp":
		r, err := client.NewUDPReceiver(client.UDPReceiverConfig{Handler: h})
		if err != nil {
			b.Fatal(err)
		}
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		_ = pc.SetReadBuffer(8 << 20)
		go r.Serve(pc)
		return udpCallback(pc.LocalAddr().String()), func() { _ = r.Close(context.Background()) }
	}
	b.Fatalf("unknown protocol %q", protocol)
	return nil, nil
}

func listen(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// benchTask is one task to load: its group ("" ungrouped) and due time.
type benchTask struct {
	group string
	due   int64
}

// loadTasks writes tasks straight into the store in big batches: setup,
// not a measured path. Tasks of a group get increasing ids in their
// group's shard, so they fire in the order given.
func loadTasks(b *testing.B, st *store.Store, tasks []benchTask) {
	b.Helper()
	payload := make([]byte, 64)
	ids := map[uint16]uint64{}
	batch := st.NewBatch()
	for i, bt := range tasks {
		shard := uint16(i % st.Shards())
		mode := storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR
		if bt.group != "" {
			shard = st.GroupShard("bench", bt.group)
		}
		ids[shard]++
		batch.PutTask(&storepb.Task{Id: store.MakeID(shard, ids[shard]), Client: "bench", Group: bt.group,
			Seq: ids[shard], Payload: payload, DueMs: bt.due, Mode: mode})
		if batch.Count() >= 10_000 || i == len(tasks)-1 {
			for shard, last := range ids {
				batch.PutShardMeta(shard, &storepb.ShardMeta{LastId: last})
			}
			if err := st.Commit(batch); err != nil {
				b.Fatal(err)
			}
			batch = st.NewBatch()
		}
	}
}

// benchRun is one run: a scheduler on a fresh store, the engine (unless
// protocol is "none") and a receiver, measuring each task from its due
// time to its acknowledgement.
type benchRun struct {
	all, others *hdrhistogram.Histogram // due → ack; others: tasks outside the hot group
	mu          sync.Mutex
	acked       atomic.Int64
	failed      atomic.Int64
	handled     atomic.Int64
	last        atomic.Int64 // Unix ns of the latest ack
	lastOther   atomic.Int64 // Unix ns of the latest ack outside the hot group
	done        chan struct{}
}

func runDeliveries(b *testing.B, protocol string, tasks []benchTask, hot string) *benchRun {
	b.Helper()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	run := &benchRun{
		all:    hdrhistogram.New(1, int64(5*time.Minute), 3),
		others: hdrhistogram.New(1, int64(5*time.Minute), 3),
		done:   make(chan struct{}),
	}
	cb, stopReceiver := benchReceiver(b, protocol, &run.handled)
	defer stopReceiver()
	c := st.NewBatch()
	c.PutClient(&storepb.Client{Id: "bench", Callback: cb, SigningSecret: testSecret})
	if err := st.Commit(c); err != nil {
		b.Fatal(err)
	}
	loadTasks(b, st, tasks)

	var deliverer scheduler.Deliverer = scheduler.DelivererFunc(func(_ scheduler.Delivery, done func(error)) { done(nil) })
	var retry scheduler.RetryDecider
	var e *Engine
	if protocol != "none" {
		e, err = New(Config{Clients: st, TCPConns: *benchConns, Pools: map[string]PoolConfig{DefaultPool: {MaxConcurrent: *benchConc}}})
		if err != nil {
			b.Fatal(err)
		}
		deliverer, retry = e, e
	}
	n := int64(len(tasks))
	measured := scheduler.DelivererFunc(func(d scheduler.Delivery, done func(error)) {
		due, group := d.Task.DueMs, d.Task.Group
		deliverer.Deliver(d, func(err error) {
			if err != nil {
				run.failed.Add(1)
				done(err)
				return
			}
			now := time.Now()
			late := max(now.Sub(time.UnixMilli(due)), time.Microsecond)
			run.mu.Lock()
			_ = run.all.RecordValue(int64(late))
			if group != hot {
				_ = run.others.RecordValue(int64(late))
			}
			run.mu.Unlock()
			run.last.Store(now.UnixNano())
			if group != hot {
				run.lastOther.Store(now.UnixNano())
			}
			if run.acked.Add(1) == n {
				close(run.done)
			}
			done(nil)
		})
	})
	s, err := scheduler.New(scheduler.Config{Store: st, Deliverer: measured, Retry: retry})
	if err == nil {
		err = s.Start(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-run.done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d of %d acknowledged, %d failed attempts", run.acked.Load(), n, run.failed.Load())
	}
	_ = s.Stop(context.Background())
	if e != nil {
		_ = e.Close(context.Background())
	}
	return run
}

// BenchmarkThroughput loads -delivery.tasks ungrouped tasks all due at the
// same instant, starts a scheduler on the real clock delivering through
// the engine to a receiver on loopback, and reports acknowledged
// deliveries per second from the due instant to the last
// acknowledgement. "none" is the scheduler acknowledging every attempt
// itself: the ceiling the engine works under.
func BenchmarkThroughput(b *testing.B) {
	for _, protocol := range benchProtocols {
		b.Run(protocol, func(b *testing.B) {
			for range b.N {
				due := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
				tasks := make([]benchTask, *benchTasks)
				for i := range tasks {
					tasks[i].due = due.UnixMilli()
				}
				run := runDeliveries(b, protocol, tasks, "-")
				if time.Unix(0, run.last.Load()).Before(due) {
					b.Fatal("loading took longer than the lead time")
				}
				elapsed := time.Unix(0, run.last.Load()).Sub(due)
				b.ReportMetric(float64(len(tasks))/elapsed.Seconds(), "acks/s")
				b.ReportMetric(float64(run.failed.Load()), "failed")
				if protocol == "udp" {
					b.ReportMetric(float64(len(tasks)-int(run.handled.Load())), "lost")
				}
			}
		})
	}
}

// steadyTasks is -delivery.rate tasks per second for -delivery.duration,
// starting at start; every groupEvery-th task goes to group hot when hot
// is not "", the others round-robin over groups (or ungrouped when groups
// is 0).
func steadyTasks(start time.Time, groups int, hot string, hotEvery int) []benchTask {
	n := int(float64(*benchRate) * benchFor.Seconds())
	tasks := make([]benchTask, n)
	for i := range tasks {
		tasks[i].due = start.Add(time.Duration(i) * time.Second / time.Duration(*benchRate)).UnixMilli()
		switch {
		case hot != "" && i%hotEvery == 0:
			tasks[i].group = hot
		case groups > 0:
			tasks[i].group = fmt.Sprint("g", i%groups)
		}
	}
	return tasks
}

func reportLatency(b *testing.B, h *hdrhistogram.Histogram, prefix string) {
	b.ReportMetric(float64(h.ValueAtQuantile(50))/1e6, prefix+"p50-ms")
	b.ReportMetric(float64(h.ValueAtQuantile(99))/1e6, prefix+"p99-ms")
	b.ReportMetric(float64(h.Max())/1e6, prefix+"max-ms")
}

// BenchmarkLatency loads ungrouped tasks due at a steady -delivery.rate
// per second for -delivery.duration and reports the time from each task's
// due time to its acknowledgement (p50, p99, max). Due times have
// millisecond resolution.
func BenchmarkLatency(b *testing.B) {
	for _, protocol := range benchProtocols {
		b.Run(protocol, func(b *testing.B) {
			for range b.N {
				run := runDeliveries(b, protocol, steadyTasks(time.Now().Add(3*time.Second), 0, "", 0), "-")
				reportLatency(b, run.all, "")
				b.ReportMetric(float64(run.failed.Load()), "failed")
			}
		})
	}
}

// BenchmarkHotGroup delivers tasks spread over 10,000 groups over raw TCP,
// with and without one hot group that takes a share of all tasks but, as
// a group, only one delivery at a time. It reports the other groups'
// latency (due to ack) and their throughput, which the hot group must not
// hurt.
//
//   - steady: -delivery.rate tasks per second for -delivery.duration, one
//     in ten in the hot group.
//   - burst: -delivery.tasks tasks all due at once, one in twenty in the
//     hot group; acks/s counts the others, from the due instant to the
//     last of them.
func BenchmarkHotGroup(b *testing.B) {
	for _, mode := range []string{"steady", "burst"} {
		for _, hot := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/hot=%v", mode, hot), func(b *testing.B) {
				for range b.N {
					name := ""
					if hot {
						name = "hot"
					}
					start := time.Now().Add(3 * time.Second)
					var tasks []benchTask
					if mode == "steady" {
						tasks = steadyTasks(start, 10_000, name, 10)
					} else {
						tasks = burstTasks(start, 10_000, name, 20)
					}
					run := runDeliveries(b, "tcp", tasks, name)
					reportLatency(b, run.others, "others-")
					others := run.others.TotalCount()
					b.ReportMetric(float64(others)/time.Unix(0, run.lastOther.Load()).Sub(start).Seconds(), "others-acks/s")
					b.ReportMetric(float64(run.failed.Load()), "failed")
				}
			})
		}
	}
}

// burstTasks is -delivery.tasks tasks due at start, every hotEvery-th in
// group hot when hot is not "", the others round-robin over groups.
func burstTasks(start time.Time, groups int, hot string, hotEvery int) []benchTask {
	tasks := make([]benchTask, *benchTasks)
	for i := range tasks {
		tasks[i].due = start.UnixMilli()
		if hot != "" && i%hotEvery == 0 {
			tasks[i].group = hot
		} else {
			tasks[i].group = fmt.Sprint("g", i%groups)
		}
	}
	return tasks
}

package delivery

import (
	"flag"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/boomerangd/boomerang/internal/activemqtest"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// benchSinkCallback is the callback of runDeliveries' "sink" protocol.
var benchSinkCallback *storepb.Callback

var benchSinkTasks = flag.Int("delivery.sinktasks", 20_000, "tasks per run of BenchmarkQueueSinks")

// sinkTasks are n tasks in 1,000 groups, all due now.
func sinkTasks(n int) []benchTask {
	due := time.Now().UnixMilli()
	tasks := make([]benchTask, n)
	for i := range tasks {
		tasks[i] = benchTask{group: "g" + strconv.Itoa(i%1000), due: due}
	}
	return tasks
}

// BenchmarkQueueSinks delivers -delivery.sinktasks tasks in 1,000 groups,
// all due at once, through the scheduler and the engine to a queue sink,
// and reports acknowledged deliveries per second.
//
//   - activemq: a broker from Debian's package (persistent messages,
//     KahaDB), drained by one consumer meanwhile; beside it, in the same
//     run against the same broker, go-stomp's own Conn sending the same
//     number of persistent messages with receipts, one at a time on one
//     connection and from 16 goroutines on 16 connections: the ceiling
//     of the client library.
//   - sqs: the in-test stand-in server; besides deliveries/s it reports
//     the stand-in's send requests per task (batching).
func BenchmarkQueueSinks(b *testing.B) {
	n := *benchSinkTasks
	b.Run("activemq", func(b *testing.B) {
		br := activemqtest.Start(b)
		drain(b, br, "/queue/orders.bench")
		cb := activemqCallback(br.URL("/queue/orders.bench"))
		plainSTOMPLoop(b, br, 16, n) // warms the broker's JIT up for all that follows
		b.Run("boomerang", func(b *testing.B) {
			for range b.N {
				reportSink(b, runSink(b, cb, sinkTasks(n)), n)
			}
		})
		for _, conns := range []int{1, 16} {
			b.Run("go-stomp-loop-conns-"+strconv.Itoa(conns), func(b *testing.B) {
				for range b.N {
					start := time.Now()
					plainSTOMPLoop(b, br, conns, n)
					b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
				}
			})
		}
	})
	b.Run("sqs", func(b *testing.B) {
		b.Setenv(sqsQueueEnv, "")
		q := newSQSTarget(b)
		for range b.N {
			before := len(q.standIn.sends())
			start := time.Now()
			runSink(b, sqsCallback(q.endpoint), sinkTasks(n))
			elapsed := time.Since(start)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/task")
			b.ReportMetric(float64(len(q.standIn.sends())-before)/float64(n), "requests/task")
		}
	})
}

// runSink runs the tasks through a scheduler and engine to cb; its
// duration is from the due instant to the last acknowledgement.
func runSink(b *testing.B, cb *storepb.Callback, tasks []benchTask) time.Duration {
	b.Helper()
	benchSinkCallback = cb
	run := runDeliveries(b, "sink", tasks, "")
	return time.Duration(run.last.Load() - tasks[0].due*int64(time.Millisecond))
}

func reportSink(b *testing.B, d time.Duration, n int) {
	b.ReportMetric(float64(n)/d.Seconds(), "deliveries/s")
}

// drain consumes the queue while the benchmark runs, as a consumer
// would, so that the broker's memory limit does not slow producers.
func drain(b *testing.B, br *activemqtest.Broker, queue string) {
	sub := br.Consumer(queue)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-sub.C:
			case <-done:
				return
			}
		}
	}()
	b.Cleanup(func() {
		close(done)
		wg.Wait()
	})
}

// plainSTOMPLoop sends n persistent messages with receipts through
// go-stomp's Conn, split among conns connections.
func plainSTOMPLoop(b *testing.B, br *activemqtest.Broker, conns, n int) {
	var wg sync.WaitGroup
	for c := range conns {
		conn, err := stomp.Dial("tcp", br.Addr(), stomp.ConnOpt.Login(activemqtest.User, activemqtest.Password), stomp.ConnOpt.HeartBeat(0, 0))
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Disconnect()
			body := make([]byte, 64)
			for i := c; i < n; i += conns {
				if err := conn.Send("/queue/orders.bench", "application/octet-stream", body,
					stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

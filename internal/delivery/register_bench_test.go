package delivery

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

var benchCallers = flag.Int("delivery.callers", 1024, "registering callers in BenchmarkRegisterToDelivered")

// BenchmarkRegisterToDelivered is the whole path of a task due at once:
// -delivery.callers callers each register a task (256-byte payload, due
// now) and wait for its acknowledgement, then register the next; the
// scheduler fires each and the engine delivers it over raw TCP to a
// receiver on loopback, which acknowledges it. It reports tasks
// delivered and acknowledged per second, from the first registration to
// the last acknowledgement. registered-only is the baseline in the same
// run: the same registrations due in an hour, so nothing fires.
func BenchmarkRegisterToDelivered(b *testing.B) {
	for _, mode := range []string{"registered-only", "delivered"} {
		for _, groups := range []int{0, 1000} {
			b.Run(fmt.Sprintf("%s/groups=%d", mode, groups), func(b *testing.B) {
				benchRegisterToDelivered(b, groups, mode == "delivered")
			})
		}
	}
}

func benchRegisterToDelivered(b *testing.B, groups int, fire bool) {
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var handled atomic.Int64
	cb, stopReceiver := benchReceiver(b, "tcp", &handled)
	defer stopReceiver()
	c := st.NewBatch()
	c.PutClient(&storepb.Client{Id: "bench", Callback: cb, SigningSecret: testSecret})
	if err := st.Commit(c); err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Clients: st, TCPConns: *benchConns, Pools: map[string]PoolConfig{DefaultPool: {MaxConcurrent: *benchConc}}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	n := int64(b.N)
	var acked, failed atomic.Int64
	done := make(chan struct{})
	counted := scheduler.DelivererFunc(func(d scheduler.Delivery, ack func(error)) {
		e.Deliver(d, func(err error) {
			if err != nil {
				failed.Add(1)
			} else if acked.Add(1) == n {
				close(done)
			}
			ack(err)
		})
	})
	s, err := scheduler.New(scheduler.Config{Store: st, Deliverer: counted, Retry: e})
	if err == nil {
		err = s.Start(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop(context.Background())

	payload := make([]byte, 256)
	delay := time.Hour
	if fire {
		delay = 0
	}
	var next atomic.Int64
	b.ResetTimer()
	begin := time.Now()
	var wg sync.WaitGroup
	for range *benchCallers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > n {
					return
				}
				req := scheduler.RegisterRequest{Client: "bench", Payload: payload, Delay: delay}
				if groups > 0 {
					req.Group = fmt.Sprint("g", i%int64(groups))
				}
				if _, _, err := s.Register(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if fire {
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("%d of %d acknowledged, %d failed attempts", acked.Load(), n, failed.Load())
		}
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(n)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(failed.Load()), "failed")
}

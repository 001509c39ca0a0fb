package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

// localCluster is n schedulers in one process, each on its own store in
// a temp dir on the real disk, their shards replicated over an in-process
// network with the default Raft settings.
type localCluster struct {
	tb    testing.TB
	nw    *replica.LocalNetwork
	nodes []*Scheduler
	down  []bool
	stops []func()
}

// newLocalCluster starts a localCluster whose nodes deliver through
// del(node), their configurations changed by tune (nil: none), and waits
// until every shard has a leader holding its lease.
func newLocalCluster(tb testing.TB, n int, del func(node int) Deliverer, tune func(*Config)) *localCluster {
	tb.Helper()
	c := &localCluster{tb: tb, nw: replica.NewLocalNetwork(1), down: make([]bool, n)}
	var peers []uint64
	if n > 1 {
		for i := range n {
			peers = append(peers, uint64(i+1))
		}
	}
	for i := range n {
		st, err := store.Open(tb.TempDir(), store.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		cfg := Config{Store: st, Deliverer: del(i), Partitions: *benchPartitions}
		if n > 1 {
			cfg.NodeID, cfg.Peers, cfg.Transport = uint64(i+1), peers, c.nw
		}
		if tune != nil {
			tune(&cfg)
		}
		s, err := New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			tb.Fatal(err)
		}
		c.nw.Join(uint64(i+1), s.Node())
		c.nodes = append(c.nodes, s)
		c.stops = append(c.stops, func() {
			if !c.down[i] {
				_ = s.Stop(context.Background())
			}
			if err := st.Close(); err != nil {
				tb.Error(err)
			}
		})
	}
	tb.Cleanup(c.stop)
	c.awaitLeases()
	return c
}

// stop stops every node and closes its store, once.
func (c *localCluster) stop() {
	if c.stops == nil {
		return
	}
	for _, stop := range c.stops {
		stop()
	}
	c.stops = nil
	c.nw.Close()
}

// awaitLeases waits until every shard has a leader holding its lease.
func (c *localCluster) awaitLeases() {
	waitUntil(c.tb, 30*time.Second, "a leased leader for every shard", func() bool {
		for shard := range uint16(store.DefaultShards) {
			if c.leader(shard) < 0 {
				return false
			}
		}
		return true
	})
}

// leader returns the node holding shard's lease, or -1.
func (c *localCluster) leader(shard uint16) int {
	for i, s := range c.nodes {
		if !c.down[i] && s.Node().Leased(shard) {
			return i
		}
	}
	return -1
}

// register registers on the node that leads the task's shard, or, for an
// ungrouped task, on node hint, trying the next ones when a node leads
// nothing.
func (c *localCluster) register(ctx context.Context, req RegisterRequest, hint int) (TaskView, error) {
	if req.Group != "" {
		if l := c.leader(c.nodes[0].cfg.Store.GroupShard(req.Client, req.Group)); l >= 0 {
			hint = l
		}
	}
	var err error
	for i := range c.nodes {
		n := (hint + i) % len(c.nodes)
		if c.down[n] {
			continue
		}
		var v TaskView
		if v, _, err = c.nodes[n].Register(ctx, req); !errors.Is(err, ErrNotLeader) {
			return v, err
		}
	}
	return TaskView{}, err
}

// BenchmarkRegisterReplicated is BenchmarkRegister's load (callers each
// waiting for its acknowledgement, 256-byte payloads due in an hour, 1,000
// groups) against one node and against three replicas of every shard in
// one process, on the same cores.
func BenchmarkRegisterReplicated(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			c := newLocalCluster(b, n, func(int) Deliverer {
				return DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })
			}, nil)
			payload := make([]byte, 256)
			var next atomic.Int64
			b.ResetTimer()
			begin := time.Now()
			var wg sync.WaitGroup
			for caller := range *benchCallers {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						req := RegisterRequest{Client: "bench", Group: fmt.Sprint("g", i%1000), Payload: payload, Delay: time.Hour}
						if _, err := c.register(context.Background(), req, caller); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "regs/s")
		})
	}
}

// BenchmarkRegisterBatchReplicated is BenchmarkRegisterReplicated's
// comparison under the load a server sees from pipelined connections,
// whose reader registers the requests that arrived together as one
// batch: -scheduler.batchers callers each register batches of 64 tasks
// (256-byte payloads due in an hour, 1,000 groups) on one node, tasks of
// groups whose shard that node leads, and wait for each batch.
func BenchmarkRegisterBatchReplicated(b *testing.B) {
	const perBatch = 64
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			c := newLocalCluster(b, n, func(int) Deliverer {
				return DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })
			}, nil)
			led := make([][]string, n) // each node's groups
			for g := range 1000 {
				group := fmt.Sprint("g", g)
				if l := c.leader(c.nodes[0].cfg.Store.GroupShard("bench", group)); l >= 0 {
					led[l] = append(led[l], group)
				}
			}
			payload := make([]byte, 256)
			b.ResetTimer()
			begin := time.Now()
			batchLoad(b, *benchBatchers, perBatch, func(caller int, first int64, batch []RegisterRequest) {
				groups := led[caller%n]
				for i := range batch {
					batch[i] = RegisterRequest{Client: "bench", Group: groups[(first+int64(i))%int64(len(groups))], Payload: payload, Delay: time.Hour}
				}
			}, func(caller int, batch []RegisterRequest) ([]RegisterResult, error) {
				return c.nodes[caller%n].RegisterBatch(context.Background(), batch)
			})
			b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "regs/s")
		})
	}
}

// BenchmarkFailover measures, with three replicas and default settings,
// the time from the leader of a group's shard stopping (a crash: it
// leaves the network and stops) to a task of that group registered on
// the survivors firing.
func BenchmarkFailover(b *testing.B) {
	var times []time.Duration
	for range b.N {
		fired := make(chan struct{}, 16)
		c := newLocalCluster(b, 3, func(int) Deliverer {
			return DelivererFunc(func(_ Delivery, done func(error)) {
				fired <- struct{}{}
				done(nil)
			})
		}, nil)
		shard := c.nodes[0].cfg.Store.GroupShard("bench", "g")
		old := c.leader(shard)
		begin := time.Now()
		c.nw.Isolate(uint64(old+1), true)
		c.down[old] = true
		_ = c.nodes[old].Stop(context.Background())
		req := RegisterRequest{Client: "bench", Group: "g", Payload: []byte("x"), IdempotencyKey: "k"}
		testwait.Err(b, time.Minute, "a new leader to accept a registration", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := c.register(ctx, req, (old+1)%3)
			return err
		})
		<-fired
		times = append(times, time.Since(begin))
		c.stop()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max-ms")
}

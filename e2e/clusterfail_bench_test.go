package e2e

import (
	"context"
	"flag"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/history"
)

var clusterTasks = flag.Int("cluster.tasks", 400, "TestClusterThroughput: tasks to register per cluster size")

// TestClusterThroughput registers -cluster.tasks tasks, due 500 ms after
// they are sent, from 16 concurrent callers spread over the nodes, on a
// cluster of one node (Raft and etcd, nothing to replicate to) and of
// three; every task must be delivered, and the history must check. It
// logs registrations per second and how late the tasks reached the
// loopback receiver, for docs/cluster.md; it asserts no speed.
func TestClusterThroughput(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run("nodes="+strconv.Itoa(n), func(t *testing.T) {
			c := &fcluster{t: t, etcd: startFetcd(t)}
			for range n {
				c.start(c.addNode())
			}
			c.settle(n)
			hist := &history.History{}
			url := startHistoryReceiver(t, hist)
			var clients []*client.Client
			for _, nd := range c.nodes {
				clients = append(clients, nd.login(t, "admin", adminPassword))
			}
			elapsed := registerFlat(t, clients, hist, url, *clusterTasks)
			waitFor(t, "every task delivered", func() bool { return len(hist.Pending()) == 0 })
			for _, v := range hist.Check() {
				t.Error(v)
			}
			t.Logf("%d nodes: %d registrations in %v, %.0f/s; fire lateness %s", n, *clusterTasks, elapsed.Round(time.Millisecond),
				float64(*clusterTasks)/elapsed.Seconds(), lateness(hist.Deliveries()))
		})
	}
}

// registerFlat registers n ungrouped tasks from 16 callers as fast as
// they are acknowledged, records them, and returns how long it took.
func registerFlat(t *testing.T, clients []*client.Client, hist *history.History, url string, n int) time.Duration {
	const callers = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				key := "t" + strconv.FormatInt(i, 10)
				r := history.Registration{Key: key, Due: time.Now().Add(500 * time.Millisecond).UnixMilli(), Sent: time.Now()}
				req := &boomerangv1.RegisterTaskRequest{Payload: []byte(key), When: &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: r.Due},
					Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: url}}
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				resp, err := c.RegisterTask(ctx, req)
				cancel()
				if err != nil {
					t.Errorf("register %s: %v", key, err)
					return
				}
				r.Acked, r.ID, r.AckedAt = true, resp.GetTask().GetId(), time.Now()
				hist.Register(r)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

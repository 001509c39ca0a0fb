package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/testwait"
)

// A cluster of three boomerang processes and an embedded etcd (boomerang
// etcd), all on loopback. Tasks are registered through one node, which
// forwards each to its shard's leader; then the node leading the most
// shards is killed with SIGKILL while registrations go on. Every
// acknowledged registration, before and after the kill, is delivered;
// each group's tasks are first delivered in the order they were
// registered; tasks registered after the kill fire, so firing resumed on
// the new leaders.
func TestClusterFailover(t *testing.T) {
	etcd := startEtcd(t)
	nodes := startNodes(t, etcd, 3)
	admin := nodes[0].admin(t)
	awaitSettled(t, admin, 3)
	rec := startReceiver(t, false)
	h := &failoverHistory{acked: map[uint64]failoverTask{}}

	h.register(t, admin, rec.url(), 0, 40)
	victim, id := busiestLeader(t, admin, nodes)
	victim.kill()
	failover := measureFailover(admin, id)
	h.register(t, admin, rec.url(), 40, 40)
	select {
	case d := <-failover:
		t.Logf("every shard the killed node led was led again, as reported in etcd, %v after the kill", d.Round(time.Millisecond))
	case <-time.After(waitLimit):
		t.Fatal("the killed node's shards were not led again")
	}

	delivered := map[uint64]bool{}
	var order []uint64
	waitFor(t, "every acknowledged task delivered", func() bool {
		for {
			select {
			case d := <-rec.got:
				id, err := strconv.ParseUint(d.taskID, 10, 64)
				if err != nil {
					t.Fatalf("delivery with task id %q", d.taskID)
				}
				if !delivered[id] {
					delivered[id] = true
					order = append(order, id)
				}
			default:
				return len(delivered) >= len(h.acked) && !slices.ContainsFunc(h.ids(), func(id uint64) bool { return !delivered[id] })
			}
		}
	})
	h.checkGroupOrder(t, order)
}

// measureFailover reports, once, how long after now every shard has a
// leader other than node id, as GetCluster reports them.
func measureFailover(c *client.Client, id string) <-chan time.Duration {
	start := time.Now()
	out := make(chan time.Duration, 1)
	go func() {
		if testwait.Until(waitLimit, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cl, err := c.GetCluster(ctx, &boomerangv1.GetClusterRequest{})
			return err == nil && !slices.ContainsFunc(cl.GetShards(), func(s *boomerangv1.ClusterShard) bool {
				return s.GetLeader() == "" || s.GetLeader() == id
			})
		}) {
			out <- time.Since(start)
		}
	}()
	return out
}

// startEtcd runs boomerang etcd on free ports and returns its client
// address.
func startEtcd(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "boomerang"), "etcd", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--client-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if kv := parseLogLine(sc.Text()); kv["msg"] == "embedded etcd serving" {
				addr <- kv["clients"]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(waitLimit):
		t.Fatal("boomerang etcd did not report its address")
		return ""
	}
}

// startNodes starts nodes 1 to n of a cluster on etcd.
func startNodes(t *testing.T, etcd string, n int) []*server {
	t.Helper()
	var nodes []*server
	for id := range n {
		nodes = append(nodes, startNode(t, etcd, id+1))
	}
	return nodes
}

// startNode runs a cluster node with its replication address on a free
// port, and waits until its copy of clients and sessions caught up.
func startNode(t *testing.T, etcd string, id int) *server {
	t.Helper()
	return startNodeIn(t, etcd, id, "")
}

// startNodeIn is startNode on dataDir ("" = a new temp dir).
func startNodeIn(t *testing.T, etcd string, id int, dataDir string) *server {
	t.Helper()
	addr := freeAddr(t)
	s := startServer(t, dataDir, "--etcd", etcd, "--cluster", "e2e", "--node-id", strconv.Itoa(id), "--cluster-addr", addr,
		"--dead-timeout", "5s")
	s.awaitLog(t, "clients caught up", func(kv map[string]string) bool { return kv["msg"] == "clients and sessions caught up with the cluster" })
	return s
}

// awaitSettled waits until every shard has replicas replicas, all on
// live nodes without a mark, and is led by its preferred leader.
func awaitSettled(t *testing.T, c *client.Client, replicas int) {
	t.Helper()
	waitFor(t, "the cluster to settle", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl, err := c.GetCluster(ctx, &boomerangv1.GetClusterRequest{})
		if err != nil || len(cl.GetShards()) == 0 {
			return false
		}
		usable := map[string]bool{}
		for _, n := range cl.GetNodes() {
			usable[n.GetId()] = n.GetLive() && n.GetMark() == ""
		}
		for _, s := range cl.GetShards() {
			if len(s.GetReplicas()) != replicas || s.GetLeader() == "" || s.GetLeader() != s.GetPreferredLeader() ||
				slices.ContainsFunc(s.GetReplicas(), func(id string) bool { return !usable[id] }) {
				return false
			}
		}
		return true
	})
}

// busiestLeader returns the node, other than the first, that leads the
// most shards, and its id.
func busiestLeader(t *testing.T, c *client.Client, nodes []*server) (*server, string) {
	t.Helper()
	cl, err := c.GetCluster(testContext(t), &boomerangv1.GetClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	led := map[string]int{}
	for _, s := range cl.GetShards() {
		led[s.GetLeader()]++
	}
	best := 1
	for i := 2; i < len(nodes); i++ {
		if led[strconv.Itoa(i+1)] > led[strconv.Itoa(best+1)] {
			best = i
		}
	}
	if led[strconv.Itoa(best+1)] == 0 {
		t.Fatalf("no node but the first leads a shard: %v", led)
	}
	return nodes[best], strconv.Itoa(best + 1)
}

// failoverTask is an acknowledged registration.
type failoverTask struct {
	group string
	seq   int
}

type failoverHistory struct {
	mu    sync.Mutex
	acked map[uint64]failoverTask
}

// register registers n tasks numbered from first, in 8 groups, due a
// second from now, through c. A registration that fails (its shard is
// changing leaders) is repeated with the same idempotency key until it is
// acknowledged.
func (h *failoverHistory) register(t *testing.T, c *client.Client, url string, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		group := fmt.Sprintf("g%d", i%8)
		req := &boomerangv1.RegisterTaskRequest{
			Payload: []byte(strconv.Itoa(i)), Group: group, IdempotencyKey: "task-" + strconv.Itoa(i),
			When:     &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 1000},
			Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: url},
		}
		var resp *boomerangv1.RegisterTaskResponse
		waitFor(t, "a registration acknowledged", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			resp, err = c.RegisterTask(ctx, req)
			return err == nil
		})
		h.mu.Lock()
		h.acked[resp.GetTask().GetId()] = failoverTask{group: group, seq: i}
		h.mu.Unlock()
	}
}

func (h *failoverHistory) ids() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]uint64, 0, len(h.acked))
	for id := range h.acked {
		ids = append(ids, id)
	}
	return ids
}

// checkGroupOrder checks that each group's tasks were first delivered in
// the order they were registered.
func (h *failoverHistory) checkGroupOrder(t *testing.T, order []uint64) {
	t.Helper()
	last := map[string]int{}
	for _, id := range order {
		task, ok := h.acked[id]
		if !ok {
			t.Fatalf("task %d delivered but never acknowledged", id)
		}
		if prev, seen := last[task.group]; seen && prev > task.seq {
			t.Fatalf("group %s: task %d delivered after task %d", task.group, task.seq, prev)
		}
		last[task.group] = task.seq
	}
}

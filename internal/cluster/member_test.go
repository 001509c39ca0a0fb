package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

const (
	testShards = 8
	waitLimit  = 90 * time.Second
)

// startEtcd starts an embedded etcd on free loopback ports.
func startEtcd(t *testing.T) *Embedded {
	t.Helper()
	e, err := Embed(EmbedConfig{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// client returns a new client of e.
func client(t *testing.T, e *Embedded) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientAddr()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// testNode is a real scheduler whose shards are placed by the cluster,
// replicating over loopback TCP.
type testNode struct {
	id     uint64
	st     *store.Store
	tr     *replica.TCPTransport
	s      *scheduler.Scheduler
	member *Member
}

func startNode(t *testing.T, e *Embedded, id uint64) *testNode {
	t.Helper()
	return startNodeIn(t, e, id, t.TempDir())
}

// startNodeIn starts a node on the data directory dir.
func startNodeIn(t *testing.T, e *Embedded, id uint64, dir string) *testNode {
	t.Helper()
	st, err := store.Open(dir, store.Options{Shards: testShards})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := replica.NewTCPTransport(replica.TCPConfig{ID: id, Cluster: "test", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{
		Store: st, NodeID: id, Transport: tr, Placed: true, Partitions: 2, RaftTick: 20 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), nil)).With("node", id),
		Deliverer: scheduler.DelivererFunc(func(_ scheduler.Delivery, done func(error)) { done(nil) }),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(s.Node()); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{
		Cluster: "test", Node: NodeInfo{ID: id, Raft: tr.Addr().String()}, Etcd: client(t, e), Shards: testShards,
		Local: s.Node(), Peers: tr, Interval: 50 * time.Millisecond, SessionTTL: 2, DeadTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)).With("node", id),
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	n := &testNode{id: id, st: st, tr: tr, s: s, member: m}
	t.Cleanup(n.stop)
	return n
}

// stop stops the node; it may be called more than once.
func (n *testNode) stop() {
	n.member.Stop()
	_ = n.s.Stop(context.Background())
	_ = n.tr.Close()
	_ = n.st.Close()
}

// await waits until cond returns nil, failing the test after waitLimit.
func await(t *testing.T, what string, cond func() error) {
	t.Helper()
	testwait.Err(t, waitLimit, what, cond)
}

// settled checks that the nodes' groups match the map: each shard's
// voters are its replicas, it has no learners, and its preferred leader
// leads it.
func settled(nodes []*testNode, cli *clientv3.Client) error {
	st, err := ReadState(context.Background(), cli, "test")
	if err != nil {
		return err
	}
	if st.Map == nil {
		return fmt.Errorf("no map yet")
	}
	hosts := make(map[uint64]map[uint16]bool) // node → shards it hosts
	for _, n := range nodes {
		status, err := n.s.Node().Status(context.Background())
		if err != nil {
			return err
		}
		hosts[n.id] = make(map[uint16]bool)
		for _, s := range status {
			hosts[n.id][s.Shard] = true
			p := st.Map.Of(s.Shard)
			if !p.Contains(n.id) {
				return fmt.Errorf("node %d still hosts shard %d (placed on %v)", n.id, s.Shard, p.Replicas)
			}
			if !slices.Equal(s.Voters, p.Replicas) || len(s.Learners) > 0 || s.Leader != p.Leader {
				return fmt.Errorf("shard %d on node %d: voters %v learners %v leader %d match %v commit %d; placed %v leader %d",
					s.Shard, n.id, s.Voters, s.Learners, s.Leader, s.Match, s.Commit, p.Replicas, p.Leader)
			}
		}
	}
	held := make(map[uint64]int)
	for shard := range testShards {
		p := st.Map.Of(uint16(shard))
		for _, id := range p.Replicas {
			held[id]++
		}
		for _, id := range p.Replicas {
			if !slices.ContainsFunc(nodes, func(n *testNode) bool { return n.id == id }) {
				return fmt.Errorf("shard %d placed on node %d, which is not running", shard, id)
			}
			// Checked, or a map just written, which no node has acted on
			// yet, would pass as settled.
			if !hosts[id][uint16(shard)] {
				return fmt.Errorf("shard %d placed on node %d, which does not host it yet", shard, id)
			}
		}
	}
	for _, n := range nodes {
		if held[n.id] == 0 {
			return fmt.Errorf("node %d holds no replica", n.id)
		}
	}
	return nil
}

// anyLeader runs op on each node in turn until one leads the shard op
// is for.
func anyLeader(t *testing.T, nodes []*testNode, op func(ctx context.Context, s *scheduler.Scheduler) error) {
	t.Helper()
	await(t, "an operation on the shard's leader", func() error {
		var errs []error
		for _, n := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := op(ctx, n.s)
			cancel()
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("node %d: %w", n.id, err))
		}
		return errors.Join(errs...)
	})
}

// Nodes that start empty get every shard placed on three of them; a
// fourth node gets its share; a stopped node's replicas are replaced
// after the dead timeout; a drained node's replicas move away. No task
// is lost on the way.
func TestMembersPlaceAndMoveShards(t *testing.T) {
	etcd := startEtcd(t)
	cli := client(t, etcd)
	var nodes []*testNode
	for id := range uint64(3) {
		nodes = append(nodes, startNode(t, etcd, id+1))
	}
	await(t, "three nodes settle", func() error { return settled(nodes, cli) })

	var ids []uint64
	for i := range 40 {
		req := scheduler.RegisterRequest{Client: "c", Group: fmt.Sprintf("g%d", i), Payload: []byte("x"), Delay: time.Hour}
		anyLeader(t, nodes, func(ctx context.Context, s *scheduler.Scheduler) error {
			v, _, err := s.Register(ctx, req)
			if err == nil {
				ids = append(ids, v.Task.GetId())
			}
			return err
		})
	}
	checkTasks := func(live []*testNode) {
		t.Helper()
		for _, id := range ids {
			anyLeader(t, live, func(ctx context.Context, s *scheduler.Scheduler) error {
				_, err := s.Get(ctx, scheduler.Caller{Admin: true}, id)
				return err
			})
		}
	}

	nodes = append(nodes, startNode(t, etcd, 4))
	await(t, "a fourth node gets its share", func() error { return settled(nodes, cli) })
	checkTasks(nodes)

	nodes[1].stop()
	nodes = slices.Delete(nodes, 1, 2)
	await(t, "a stopped node's replicas are replaced", func() error { return settled(nodes, cli) })
	checkTasks(nodes)

	if err := SetMark(context.Background(), cli, "test", 1, MarkDraining); err != nil {
		t.Fatal(err)
	}
	drained := nodes[0]
	nodes = nodes[1:]
	await(t, "a drained node's replicas move away", func() error {
		if st, err := drained.s.Node().Status(context.Background()); err != nil || len(st) > 0 {
			return fmt.Errorf("the drained node hosts %d shards (%v)", len(st), err)
		}
		return settled(nodes, cli)
	})
	checkTasks(nodes)
}

// With etcd gone, the shards keep their leaders and take registrations
// and reads; the members only wait to place anything again.
func TestMembersServeWithoutEtcd(t *testing.T) {
	etcd := startEtcd(t)
	cli := client(t, etcd)
	var nodes []*testNode
	for id := range uint64(3) {
		nodes = append(nodes, startNode(t, etcd, id+1))
	}
	await(t, "three nodes settle", func() error { return settled(nodes, cli) })
	t.Cleanup(func() {
		if t.Failed() {
			logStatus(t, nodes)
		}
	})
	etcd.Close()
	for i := range 20 {
		req := scheduler.RegisterRequest{Client: "c", Group: fmt.Sprintf("g%d", i), Payload: []byte("x"), Delay: time.Hour}
		anyLeader(t, nodes, func(ctx context.Context, s *scheduler.Scheduler) error {
			v, _, err := s.Register(ctx, req)
			if err == nil {
				_, err = s.Get(ctx, scheduler.Caller{Admin: true}, v.Task.GetId())
			}
			return err
		})
	}
}

// logStatus logs every node's view of every group it hosts.
func logStatus(t *testing.T, nodes []*testNode) {
	for _, n := range nodes {
		st, err := n.s.Node().Status(context.Background())
		t.Logf("node %d hosts %d groups (%v)", n.id, len(st), err)
		for _, s := range st {
			t.Logf("node %d shard %d: leader %d term %d voters %v learners %v commit %d applied %d match %v active %v",
				n.id, s.Shard, s.Leader, s.Term, s.Voters, s.Learners, s.Commit, s.Applied, s.Match, s.Active)
		}
	}
}

// A standalone data directory becomes node 1 of a cluster: its shards
// stay where they are led, the other nodes join them, and every task
// registered before is there, also once its first node is drained.
func TestStandaloneBecomesFirstNode(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{Shards: testShards})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{
		Store: st, Partitions: 2, Deliverer: scheduler.DelivererFunc(func(_ scheduler.Delivery, done func(error)) { done(nil) }),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for i := range 20 {
		v, _, err := s.Register(context.Background(), scheduler.RegisterRequest{Client: "c", Group: fmt.Sprintf("g%d", i), Payload: []byte("x"), Delay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.Task.GetId())
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	etcd := startEtcd(t)
	cli := client(t, etcd)
	nodes := []*testNode{startNodeIn(t, etcd, 1, dir)}
	await(t, "the first node's map", func() error { return settled(nodes, cli) })
	nodes = append(nodes, startNode(t, etcd, 2), startNode(t, etcd, 3))
	await(t, "the cluster settles", func() error { return settled(nodes, cli) })
	if err := SetMark(context.Background(), cli, "test", 1, MarkDraining); err != nil {
		t.Fatal(err)
	}
	await(t, "the first node is drained", func() error {
		if st, err := nodes[0].s.Node().Status(context.Background()); err != nil || len(st) > 0 {
			return fmt.Errorf("the drained node hosts %d shards (%v)", len(st), err)
		}
		return settled(nodes[1:], cli)
	})
	for _, id := range ids {
		anyLeader(t, nodes[1:], func(ctx context.Context, s *scheduler.Scheduler) error {
			_, err := s.Get(ctx, scheduler.Caller{Admin: true}, id)
			return err
		})
	}
}

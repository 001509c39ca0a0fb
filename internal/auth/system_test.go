package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

// The system group across nodes: three in one process over a
// replica.LocalNetwork, each a store in its own directory, a node that
// hosts only the system group, and an Auth fed by it.

const systemNodes = 3

type systemCluster struct {
	t     *testing.T
	nw    *replica.LocalNetwork
	keys  [][]byte
	clock *clockwork.FakeClock
	peers []uint64
	nodes []*systemNode // by id - 1
	// compactEvery is the nodes' replica.Config.CompactEvery.
	compactEvery uint64
}

type systemNode struct {
	id       uint64
	dir      string
	st       *store.Store
	node     *replica.Node
	a        *Auth
	restored atomic.Int64 // snapshots restored
}

// counting feeds an Auth and counts the snapshots it restores.
type counting struct {
	*Auth
	n *systemNode
}

func (c counting) Restore(shard uint16, write func() error) {
	c.n.restored.Add(1)
	c.Auth.Restore(shard, write)
}

func startSystemCluster(t *testing.T, compactEvery uint64) *systemCluster {
	c := &systemCluster{
		t: t, nw: replica.NewLocalNetwork(uint64(time.Now().UnixNano())), keys: [][]byte{GenerateKey()},
		clock: clockwork.NewFakeClockAt(epoch), compactEvery: compactEvery,
	}
	for id := range uint64(systemNodes) {
		c.peers = append(c.peers, id+1)
		c.nodes = append(c.nodes, &systemNode{id: id + 1, dir: t.TempDir()})
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.stop(n)
		}
		c.nw.Close()
	})
	for _, n := range c.nodes {
		c.start(n)
	}
	c.awaitLeader()
	return c
}

func (c *systemCluster) start(n *systemNode) {
	c.t.Helper()
	st, err := store.Open(n.dir, store.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	a, err := New(st, Config{Clock: c.clock, Hash: lightHash, SecretKeys: c.keys, LoginsPerSource: 1e6, LoginChecksPerSecond: 1e6})
	if err != nil {
		c.t.Fatal(err)
	}
	node, err := replica.New(replica.Config{
		ID: n.id, Peers: c.peers, Shards: []uint16{store.SystemShard}, Store: st, StateMachine: counting{a, n},
		Transport: c.nw, Tick: 20 * time.Millisecond, CompactEvery: c.compactEvery,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	a.Attach(node)
	if err := node.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.nw.Join(n.id, node)
	n.st, n.node, n.a = st, node, a
}

func (c *systemCluster) stop(n *systemNode) {
	if n.st == nil {
		return
	}
	n.node.Stop()
	if err := n.st.Close(); err != nil {
		c.t.Errorf("node %d: close the store: %v", n.id, err)
	}
	n.st, n.node, n.a = nil, nil, nil
}

// status is what node n knows of the system group.
func (c *systemCluster) status(n *systemNode) replica.ShardStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := n.node.Status(ctx)
	if err != nil {
		c.t.Fatalf("node %d: Status: %v", n.id, err)
	}
	for _, s := range list {
		if s.Shard == store.SystemShard {
			return s
		}
	}
	c.t.Fatalf("node %d hosts no system group", n.id)
	return replica.ShardStatus{}
}

// await waits until cond holds, failing the test after 20 s.
func (c *systemCluster) await(what string, cond func() bool) {
	c.t.Helper()
	testwait.For(c.t, 20*time.Second, what, cond)
}

// awaitLeader waits until every running node knows the same leader, and
// returns it.
func (c *systemCluster) awaitLeader() *systemNode {
	c.t.Helper()
	var leader uint64
	c.await("a leader every node knows", func() bool {
		leader = 0
		for _, n := range c.up() {
			s := c.status(n)
			if s.Leader == 0 || leader != 0 && s.Leader != leader {
				return false
			}
			leader = s.Leader
		}
		return c.nodes[leader-1].st != nil
	})
	return c.nodes[leader-1]
}

// awaitApplied waits until every running node has applied what the
// leader has committed now: from then on each answers from the same
// state.
func (c *systemCluster) awaitApplied() {
	c.t.Helper()
	commit := c.status(c.awaitLeader()).Commit
	c.await(fmt.Sprintf("every node applying up to %d", commit), func() bool {
		for _, n := range c.up() {
			if c.status(n).Applied < commit {
				return false
			}
		}
		return true
	})
}

func (c *systemCluster) up() []*systemNode {
	var out []*systemNode
	for _, n := range c.nodes {
		if n.st != nil {
			out = append(out, n)
		}
	}
	return out
}

func (c *systemCluster) followers(leader *systemNode) []*systemNode {
	return slices.DeleteFunc(c.up(), func(n *systemNode) bool { return n == leader })
}

// A client registered on the leader logs in on every node; a session
// made on one node is valid on every other; a revoked session is refused
// everywhere once the revocation is applied there.
func TestSystemGroupAcrossNodes(t *testing.T) {
	t.Parallel()
	c := startSystemCluster(t, 0)
	leader := c.awaitLeader()
	if _, _, err := leader.a.RegisterClient(ClientSpec{ID: "alice", Password: "alice-password"}); err != nil {
		t.Fatal(err)
	}
	// A follower's change goes through the leader too.
	follower := c.followers(leader)[0]
	if _, _, err := follower.a.RegisterClient(ClientSpec{ID: "bob", Password: "bob-password"}); err != nil {
		t.Fatalf("register on a follower: %v", err)
	}
	if _, _, err := leader.a.RegisterClient(ClientSpec{ID: "bob", Password: "bob-password"}); !errors.Is(err, ErrExists) {
		t.Fatalf("registering bob again on the leader: %v, want ErrExists", err)
	}
	c.awaitApplied()

	sessions := map[uint64]Session{}
	for _, n := range c.nodes {
		s, err := n.a.Login("alice", "alice-password", testSource)
		if err != nil {
			t.Fatalf("node %d: login: %v", n.id, err)
		}
		sessions[n.id] = s
	}
	c.awaitApplied()
	for _, n := range c.nodes {
		for made, s := range sessions {
			if p, err := n.a.Authenticate(s.ID); err != nil || p.Client != "alice" || p.Session != s.Handle {
				t.Errorf("node %d: the session made on node %d: %+v, %v", n.id, made, p, err)
			}
		}
		if got := len(n.a.ListSessions("alice")); got != systemNodes {
			t.Errorf("node %d lists %d sessions of alice, want %d", n.id, got, systemNodes)
		}
	}

	// Revoke the session made on the leader from a follower, log out the
	// follower's own on the leader.
	if n, err := follower.a.RevokeSessions("alice", sessions[leader.id].Handle); err != nil || n != 1 {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if err := leader.a.Logout(sessions[leader.id].ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("the revoking node acknowledged, so the leader applied it too: logout gives %v", err)
	}
	if err := leader.a.Logout(sessions[follower.id].ID); err != nil {
		t.Fatal(err)
	}
	c.awaitApplied()
	for _, n := range c.nodes {
		for _, id := range []uint64{leader.id, follower.id} {
			if _, err := n.a.Authenticate(sessions[id].ID); !errors.Is(err, ErrUnknownSession) {
				t.Errorf("node %d: ended session from node %d: %v, want ErrUnknownSession", n.id, id, err)
			}
		}
	}

	// A password change ends the client's other sessions everywhere; a
	// deregistration ends the client everywhere.
	if err := follower.a.ChangePassword("alice", "", "alice-password-2", testSource, ""); err != nil {
		t.Fatal(err)
	}
	if err := leader.a.DeregisterClient("bob"); err != nil {
		t.Fatal(err)
	}
	c.awaitApplied()
	for _, n := range c.nodes {
		if len(n.a.ListSessions("")) != 0 {
			t.Errorf("node %d: sessions left after the password change: %+v", n.id, n.a.ListSessions(""))
		}
		if _, err := n.a.Client("bob"); !errors.Is(err, ErrNotFound) {
			t.Errorf("node %d: bob after deregistration: %v", n.id, err)
		}
		if !n.a.CheckPassword("alice", "alice-password-2") {
			t.Errorf("node %d: alice's new password is refused", n.id)
		}
	}
	c.checkSameState()
}

// checkSameState compares the nodes' stores: every client record and
// session, byte for byte.
func (c *systemCluster) checkSameState() {
	c.t.Helper()
	c.awaitApplied()
	var first string
	for i, n := range c.up() {
		got := dumpSystem(c.t, n.st)
		if i == 0 {
			first = got
		} else if got != first {
			c.t.Errorf("node %d's system state differs from node %d's:\n%s\nvs\n%s", n.id, c.up()[0].id, got, first)
		}
	}
}

func dumpSystem(t *testing.T, st *store.Store) string {
	t.Helper()
	ss, err := st.SnapshotShard(store.SystemShard)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var out string
	err = ss.Each(func(k, v []byte) error {
		if k[0] != 'm' { // the meta holds the applied index, which differs
			out += fmt.Sprintf("%x=%x\n", k, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A node that was down while the log moved on past what the others keep
// catches up from a snapshot of the system group's state.
func TestSystemGroupSnapshotCatchUp(t *testing.T) {
	t.Parallel()
	c := startSystemCluster(t, 4)
	leader := c.awaitLeader()
	down := c.followers(leader)[0]
	if _, _, err := leader.a.RegisterClient(ClientSpec{ID: "early", Password: "early-password"}); err != nil {
		t.Fatal(err)
	}
	c.awaitApplied()
	session, err := down.a.Login("early", "early-password", testSource)
	if err != nil {
		t.Fatal(err)
	}
	c.awaitApplied()
	c.stop(down)

	const clients = 40 // 4 × 8 (maxLagCompactions): the leader stops keeping the log for it
	for i := range clients {
		id := fmt.Sprintf("c%02d", i)
		if _, _, err := leader.a.RegisterClient(ClientSpec{ID: id, Password: id + "-password"}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := leader.a.RevokeSessions("early", ""); err != nil || n != 1 {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	c.start(down)
	c.awaitApplied()
	if down.restored.Load() == 0 {
		t.Fatal("the node caught up without a snapshot: the test did not test it")
	}
	if got := len(down.a.ListClients()); got != clients+1 {
		t.Fatalf("node %d has %d clients after catching up, want %d", down.id, got, clients+1)
	}
	if _, err := down.a.Authenticate(session.ID); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("a session revoked while the node was down: %v", err)
	}
	if _, err := down.a.Login("c07", "c07-password", testSource); err != nil {
		t.Fatalf("login on the restored node: %v", err)
	}
	c.checkSameState()
}

// Logins on every node at once, over a network that delays, duplicates
// and reorders messages (a repeated proposal is committed twice), leave
// every node with the same clients and sessions, each session valid
// everywhere.
func TestSystemGroupUnderFaults(t *testing.T) {
	t.Parallel()
	c := startSystemCluster(t, 16)
	leader := c.awaitLeader()
	if _, _, err := leader.a.RegisterClient(ClientSpec{ID: "alice", Password: "alice-password"}); err != nil {
		t.Fatal(err)
	}
	c.awaitApplied()
	c.nw.SetFaults(replica.Faults{Duplicate: 0.2, Reorder: 0.2, MaxDelay: 5 * time.Millisecond})
	const perNode = 10
	ids := make([][]string, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			for range perNode {
				s, err := n.a.Login("alice", "alice-password", testSource)
				if err != nil {
					t.Errorf("node %d: login: %v", n.id, err)
					return
				}
				ids[i] = append(ids[i], s.ID)
			}
		})
	}
	wg.Wait()
	c.nw.SetFaults(replica.Faults{})
	c.awaitApplied()
	for _, n := range c.nodes {
		if got := len(n.a.ListSessions("alice")); got != perNode*systemNodes {
			t.Errorf("node %d lists %d sessions, want %d", n.id, got, perNode*systemNodes)
		}
		for _, list := range ids {
			for _, id := range list {
				if _, err := n.a.Authenticate(id); err != nil {
					t.Errorf("node %d: %v", n.id, err)
				}
			}
		}
	}
	c.checkSameState()
}

// When the leader stops, the other two elect another and go on taking
// changes, through either of them; the old leader catches up when it
// comes back, and its acknowledged changes are kept.
func TestSystemGroupFailover(t *testing.T) {
	t.Parallel()
	c := startSystemCluster(t, 0)
	old := c.awaitLeader()
	if _, _, err := old.a.RegisterClient(ClientSpec{ID: "before", Password: "before-password"}); err != nil {
		t.Fatal(err)
	}
	s, err := old.a.Login("before", "before-password", testSource)
	if err != nil {
		t.Fatal(err)
	}
	c.stop(old)
	leader := c.awaitLeader()
	for _, n := range c.up() {
		if _, _, err := n.a.RegisterClient(ClientSpec{ID: fmt.Sprintf("after-%d", n.id), Password: "after-password"}); err != nil {
			t.Fatalf("node %d (leader %d): %v", n.id, leader.id, err)
		}
	}
	c.start(old)
	c.awaitApplied()
	for _, n := range c.nodes {
		if got := len(n.a.ListClients()); got != systemNodes {
			t.Errorf("node %d has %d clients, want %d", n.id, got, systemNodes)
		}
		if _, err := n.a.Authenticate(s.ID); err != nil {
			t.Errorf("node %d: the session made before the failover: %v", n.id, err)
		}
	}
	c.checkSameState()
}

// In a cluster, a node whose copy of the clients has not caught up does
// not say a client is unknown: a delivery would give up on its task.
func TestClientWhileCatchingUp(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a, err := New(st, Config{Hash: lightHash, SecretKeys: [][]byte{GenerateKey()}, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Client("alice"); !errors.Is(err, ErrCatchingUp) {
		t.Fatalf("Client on a node catching up: %v, want ErrCatchingUp", err)
	}
}

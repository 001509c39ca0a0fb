package e2e

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// Clients and sessions in a cluster of four nodes (the system group's
// three voters and a learner): a client registered through one node logs
// in through another at once (read-your-writes through the system
// group's read barrier), and keeps working, new logins and sessions
// issued before alike, once the node it was registered through is killed
// with SIGKILL. On the way, a batch through one node reaches every
// shard's leader, and listings through every node, none of which hosts
// every shard, see every task.
func TestClusterClients(t *testing.T) {
	etcd := startEtcd(t)
	nodes := startNodes(t, etcd, 4)
	awaitSettled(t, nodes[0].admin(t), 3)
	ctx := testContext(t)

	const password = "client-secret-1"
	if _, err := nodes[1].admin(t).RegisterClient(ctx, &boomerangv1.RegisterClientRequest{ClientId: "c1", Password: password}); err != nil {
		t.Fatal(err)
	}
	before := login(t, nodes[2], "c1", password)
	schedule(t, before, "registered through node 2, logged in through node 3")

	checkBatchAndLists(t, nodes)
	checkDeadLetterSearch(t, nodes)

	nodes[1].kill()
	schedule(t, before, "a session issued before the kill")
	for _, n := range []*server{nodes[0], nodes[2], nodes[3]} {
		schedule(t, login(t, n, "c1", password), "a login after the kill")
	}
	// Changes go on through the remaining majority.
	admin3 := login(t, nodes[2], "admin", adminPassword)
	retryBusy(t, "a client registered after the kill", func() error {
		_, err := admin3.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{ClientId: "c2", Password: password})
		return err
	})
	schedule(t, login(t, nodes[3], "c2", password), "registered after the kill")
}

// A standalone data directory turned into node 1 of a cluster keeps its
// clients, which then log in through the other nodes, also once node 1
// is killed.
func TestClusterKeepsStandaloneClients(t *testing.T) {
	dir := newDataDir(t)
	standalone := startServer(t, dir)
	const password = "client-secret-1"
	if _, err := standalone.admin(t).RegisterClient(testContext(t), &boomerangv1.RegisterClientRequest{ClientId: "old", Password: password}); err != nil {
		t.Fatal(err)
	}
	if err := standalone.stop(); err != nil {
		t.Fatal(err)
	}
	etcd := startEtcd(t)
	nodes := []*server{startNodeIn(t, etcd, 1, dir)}
	for id := 2; id <= 3; id++ {
		nodes = append(nodes, startNode(t, etcd, id))
	}
	awaitSettled(t, login(t, nodes[0], "admin", adminPassword), 3)
	schedule(t, login(t, nodes[2], "old", password), "a standalone client through node 3")
	nodes[0].kill()
	schedule(t, login(t, nodes[1], "old", password), "a standalone client once node 1 is gone")
}

// checkBatchAndLists registers a batch of tasks in many groups, so on
// shards every node leads, through one node, then lists them through
// every node, a few at a time.
func checkBatchAndLists(t *testing.T, nodes []*server) {
	t.Helper()
	admin := login(t, nodes[0], "admin", adminPassword)
	const n = 40
	req := &boomerangv1.RegisterTasksRequest{}
	for i := range n {
		req.Tasks = append(req.Tasks, &boomerangv1.RegisterTaskRequest{
			Payload: []byte("batch"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: time.Hour.Milliseconds()},
			Group: fmt.Sprintf("batch-%d", i),
		})
	}
	resp, err := admin.RegisterTasks(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.GetResults() {
		if r.GetRegistered() == nil {
			t.Fatalf("batch task %d: %v", i, r.GetError())
		}
	}
	for _, node := range nodes {
		c := login(t, node, "admin", adminPassword)
		for _, q := range []*boomerangv1.ListTasksRequest{
			{Client: "admin", PageSize: 7},
			{Client: "admin", PageSize: 7, PayloadContains: []byte("atc")},
			{Client: "admin", PageSize: 7, Order: boomerangv1.TaskOrder_TASK_ORDER_DUE},
		} {
			if count := countListed(t, c, q); count != n {
				t.Fatalf("listing through %s (%v): %d tasks, want %d", node.tcp, q, count, n)
			}
		}
		groups, err := c.ListGroups(testContext(t), &boomerangv1.ListGroupsRequest{Client: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		if len(groups.GetGroups()) != n {
			t.Fatalf("listing through %s: %d groups, want %d", node.tcp, len(groups.GetGroups()), n)
		}
	}
	_, err = admin.DeregisterClient(testContext(t), &boomerangv1.DeregisterClientRequest{ClientId: "c1"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != boomerangv1.Status_STATUS_CONFLICT {
		t.Fatalf("deregistering a client with tasks: %v, want CONFLICT", err)
	}
}

// checkDeadLetterSearch makes dead letters in many groups, so on shards
// every node leads, and searches them through every node.
func checkDeadLetterSearch(t *testing.T, nodes []*server) {
	t.Helper()
	ctx := testContext(t)
	admin := login(t, nodes[0], "admin", adminPassword)
	if _, err := admin.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{
		ClientId: "dead", Password: "client-secret-1",
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_TCP, Endpoint: "127.0.0.1:1"},
		Retry:    &boomerangv1.RetryPolicy{MaxAttempts: 1},
	}); err != nil {
		t.Fatal(err)
	}
	dead := login(t, nodes[0], "dead", "client-secret-1")
	const n = 30
	req := &boomerangv1.RegisterTasksRequest{}
	for i := range n {
		req.Tasks = append(req.Tasks, &boomerangv1.RegisterTaskRequest{Payload: []byte("doomed"), Group: fmt.Sprintf("dead-%d", i)})
	}
	if _, err := dead.RegisterTasks(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every task dead-lettered", func() bool {
		count := 0
		for _, err := range dead.DeadLetters(ctx, &boomerangv1.ListDeadLettersRequest{}) {
			if err != nil {
				t.Fatal(err)
			}
			count++
		}
		return count == n
	})
	for _, node := range nodes {
		c := login(t, node, "admin", adminPassword)
		count := 0
		for _, err := range c.DeadLetters(ctx, &boomerangv1.ListDeadLettersRequest{Client: "dead", PayloadContains: []byte("oom"), PageSize: 7}) {
			if err != nil {
				t.Fatal(err)
			}
			count++
		}
		if count != n {
			t.Fatalf("searching dead letters through %s: %d, want %d", node.tcp, count, n)
		}
	}
}

// countListed counts the tasks q lists, page by page, checking that
// they come in q's order (id, or due time then id) without repeats.
func countListed(t *testing.T, c *client.Client, q *boomerangv1.ListTasksRequest) int {
	t.Helper()
	var last [2]uint64
	count := 0
	for task, err := range c.Tasks(testContext(t), q) {
		if err != nil {
			t.Fatal(err)
		}
		key := [2]uint64{0, task.GetId()}
		if q.GetOrder() == boomerangv1.TaskOrder_TASK_ORDER_DUE {
			key[0] = uint64(task.GetFireAtMs())
		}
		if count > 0 && slices.Compare(key[:], last[:]) <= 0 {
			t.Fatalf("listing %v: task %d after %d", q, task.GetId(), last[1])
		}
		last = key
		count++
	}
	return count
}

// schedule registers a task far in the future as c's client, again
// while the answer is BUSY (a shard changing leaders), with one
// idempotency key.
func schedule(t *testing.T, c *client.Client, what string) {
	t.Helper()
	key := fmt.Sprint(time.Now().UnixNano())
	retryBusy(t, what, func() error {
		_, err := c.Schedule(testContext(t), []byte(what), client.After(time.Hour), client.InGroup(key), client.WithIdempotencyKey(key))
		return err
	})
}

// login dials n as client id, again while the answer is BUSY (the
// system group electing a leader).
func login(t *testing.T, n *server, id, password string) *client.Client {
	t.Helper()
	var c *client.Client
	retryBusy(t, "login of "+id, func() error {
		var err error
		c, err = client.Dial(testContext(t), n.tcp, client.Credentials{ClientID: id, Password: password})
		return err
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// retryBusy calls op until it does not fail with BUSY; any other error
// fails the test.
func retryBusy(t *testing.T, what string, op func() error) {
	t.Helper()
	var err error
	waitFor(t, what, func() bool {
		err = op()
		var ce *client.Error
		return !errors.As(err, &ce) || ce.Status != boomerangv1.Status_STATUS_BUSY
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

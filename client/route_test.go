package client

import (
	"bufio"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/shard"
)

const testShards = 64

// twoNodes starts node 1, which the Client dials, and node 2, and makes
// node 1's routing view give shard s to leaders(s). Node 2 takes node
// 1's sessions once the Client logged in (sessions are valid on every
// node).
func twoNodes(t *testing.T, leaders func(s int) string) (one, two *fakeServer, c *Client) {
	t.Helper()
	one, two = startFake(t), startFake(t)
	view := &boomerangv1.GetRoutesResponse{Shards: testShards, Revision: 1, Node: "1", Client: "tester",
		Nodes: []*boomerangv1.RouteNode{{Id: "1", TcpAddress: one.addr()}, {Id: "2", TcpAddress: two.addr()}}}
	for s := range testShards {
		view.Leaders = append(view.Leaders, leaders(s))
	}
	one.set(func() { one.routes = view })
	c = dialFake(t, one)
	sess := c.Session().ID
	two.set(func() { two.sessions[sess] = time.Now().Add(time.Hour) })
	return one, two, c
}

// groupOn returns a group of the test client on a shard whose leader is
// node.
func groupOn(t *testing.T, leaders func(s int) string, node string) string {
	t.Helper()
	for _, g := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		if leaders(int(shard.OfGroup(testShards, "tester", g))) == node {
			return g
		}
	}
	t.Fatalf("no group on a shard node %s leads", node)
	return ""
}

func byParity(s int) string { return []string{"1", "2"}[s%2] }

// A task goes straight to its shard's leader, marked routed; the
// routing view is fetched once.
func TestRouteSendsToTheLeader(t *testing.T) {
	one, two, c := twoNodes(t, byParity)
	two.received = make(chan *boomerangv1.Request, 10)
	ctx := testContext(t)
	for range 3 {
		if _, err := c.Schedule(ctx, []byte("x"), InGroup(groupOn(t, byParity, "2"))); err != nil {
			t.Fatal(err)
		}
		if req := <-two.received; !req.GetRoute() || req.GetRegisterTask() == nil {
			t.Fatalf("node 2 got %v, want a routed RegisterTask", req)
		}
	}
	if _, err := c.Schedule(ctx, []byte("x"), InGroup(groupOn(t, byParity, "1"))); err != nil {
		t.Fatal(err)
	}
	one.set(func() {
		if len(one.tasks) != 1 || one.fetches != 1 {
			t.Errorf("node 1 holds %d tasks after %d view fetches, want 1 and 1", len(one.tasks), one.fetches)
		}
	})
}

// A NOT_LEADER answer sends the request on to the leader it names, and
// a hint newer than the view makes the Client fetch the view again.
func TestRouteFollowsNotLeader(t *testing.T) {
	one, two, c := twoNodes(t, func(int) string { return "1" })
	one.set(func() {
		one.onRequest = func(nc net.Conn, req *boomerangv1.Request) bool {
			if !req.GetRoute() || req.GetRegisterTask() == nil {
				return false
			}
			w := &connWriter{bw: bufio.NewWriter(nc)}
			w.write(&boomerangv1.Response{RequestId: req.GetRequestId(), Error: &boomerangv1.Error{
				Status: boomerangv1.Status_STATUS_NOT_LEADER, Message: "node 2 leads it",
				NotLeader: &boomerangv1.NotLeader{Shard: 3, LeaderId: "2", LeaderTcpAddress: two.addr(), Revision: 5},
			}})
			return true
		}
	})
	task, err := c.Schedule(testContext(t), []byte("x"), InGroup("g"))
	if err != nil || task.GetId() == 0 {
		t.Fatalf("Schedule: %v, %v", task, err)
	}
	two.set(func() {
		if len(two.tasks) != 1 {
			t.Errorf("node 2 holds %d tasks, want 1", len(two.tasks))
		}
	})
	waitFor(t, "the view fetched again", func() bool {
		one.mu.Lock()
		defer one.mu.Unlock()
		return one.fetches >= 2
	})
}

// A batch is split by leader, each part keeping the batch's order, and
// the results come back in the batch's order.
func TestRouteSplitsBatches(t *testing.T) {
	one, two, c := twoNodes(t, byParity)
	var tasks []Task
	for i := range 20 {
		tasks = append(tasks, NewTask([]byte{byte(i)}, InGroup(string(rune('a'+i)))))
	}
	results, err := c.ScheduleBatch(testContext(t), tasks...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Err != nil || r.Task.GetGroup() != string(rune('a'+i)) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	for _, f := range []*fakeServer{one, two} {
		f.set(func() {
			if len(f.batches) != 1 {
				t.Errorf("batches %v, want one", f.batches)
			}
			for _, task := range f.tasks {
				if want := byParity(int(shard.OfGroup(testShards, "tester", task.GetGroup()))); f != map[string]*fakeServer{"1": one, "2": two}[want] {
					t.Errorf("group %s went to the wrong node", task.GetGroup())
				}
			}
		})
	}
}

// A node that cannot be reached leaves the request to the node dialed.
func TestRouteAroundAnUnreachableNode(t *testing.T) {
	one, two, c := twoNodes(t, func(int) string { return "2" })
	two.close()
	if _, err := c.Schedule(testContext(t), []byte("x"), InGroup("g")); err != nil {
		t.Fatal(err)
	}
	one.set(func() {
		if len(one.tasks) != 1 {
			t.Errorf("node 1 holds %d tasks, want 1", len(one.tasks))
		}
	})
}

// A connection to a node that breaks with requests in flight: a read is
// sent again (to the node dialed), a registration without idempotency
// key fails with ErrConnectionLost.
func TestRouteLostConnection(t *testing.T) {
	one, two, c := twoNodes(t, func(int) string { return "2" })
	two.set(func() {
		two.onRequest = func(nc net.Conn, _ *boomerangv1.Request) bool {
			_ = nc.Close()
			return true
		}
	})
	id := uint64(2)<<48 | 1 // a task of shard 2
	one.set(func() { one.tasks[id] = &boomerangv1.Task{Id: id, Client: "tester"} })
	ctx := testContext(t)
	if _, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if _, err := c.Schedule(ctx, []byte("x"), InGroup("g")); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("Schedule: %v, want ErrConnectionLost", err)
	}
}

// WithRouting(false) never asks for the view, nor marks requests routed.
func TestRouteOff(t *testing.T) {
	f := startFake(t)
	f.set(func() {
		f.routes = &boomerangv1.GetRoutesResponse{Shards: testShards, Node: "1", Leaders: slices.Repeat([]string{"2"}, testShards)}
	})
	c := dialFake(t, f, WithRouting(false))
	f.received = make(chan *boomerangv1.Request, 10)
	if _, err := c.Schedule(testContext(t), []byte("x"), InGroup("g")); err != nil {
		t.Fatal(err)
	}
	if req := <-f.received; req.GetRoute() {
		t.Fatalf("request marked routed: %v", req)
	}
	f.set(func() {
		if f.fetches != 0 {
			t.Errorf("%d view fetches, want none", f.fetches)
		}
	})
}

// A BUSY answer to a repeatable request is asked again; to a
// registration without idempotency key it reaches the caller, since it
// may have taken effect.
func TestRouteAsksAgainWhenBusy(t *testing.T) {
	_, two, c := twoNodes(t, func(int) string { return "2" })
	id := uint64(5)<<48 | 1
	busy := 0
	two.set(func() {
		two.tasks[id] = &boomerangv1.Task{Id: id, Client: "tester"}
		two.onRequest = func(nc net.Conn, req *boomerangv1.Request) bool {
			two.mu.Lock()
			defer two.mu.Unlock()
			if req.GetRegisterTask() == nil && (req.GetGetTask() == nil || busy == 2) {
				return false
			}
			busy++
			w := &connWriter{bw: bufio.NewWriter(nc)}
			w.write(fail(req.GetRequestId(), boomerangv1.Status_STATUS_BUSY, "the task's shard is changing leaders", ""))
			return true
		}
	})
	ctx := testContext(t)
	if _, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if _, err := c.Schedule(ctx, []byte("x"), InGroup("g")); !errors.Is(err, ErrBusy) {
		t.Fatalf("Schedule: %v, want ErrBusy", err)
	}
	two.set(func() {
		if busy != 3 {
			t.Errorf("%d BUSY answers, want 2 to GetTask and 1 to RegisterTask", busy)
		}
	})
}

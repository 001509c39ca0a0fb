package e2e

import (
	"bufio"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/shard"
)

// Routing in a cluster of three nodes. A raw TCP request with route set
// for a shard another node leads is answered NOT_LEADER with that node's
// address, also when registrations are read together; without route the
// node forwards it. The SDK sends every request straight to its shard's
// leader, so no node forwards anything for it, while a Client with
// routing off has its requests forwarded. Once a shard's leadership
// moves, and once the node leading a shard is killed, the routing
// Client's calls for that shard go on succeeding.
func TestClusterRouting(t *testing.T) {
	etcd := startEtcd(t)
	nodes := startNodes(t, etcd, 3)
	admin := nodes[0].admin(t)
	awaitSettled(t, admin, 3)
	ctx := testContext(t)
	const password = "router-secret-1"
	if _, err := admin.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{ClientId: "router", Password: password}); err != nil {
		t.Fatal(err)
	}

	groups := groupsLedElsewhere(t, nodes, "router", password)
	checkNotLeaderFrames(t, nodes[0], groups, password)

	routed := login(t, nodes[0], "router", password)
	before := forwardedTotal(t, nodes)
	routeWork(t, routed)
	if after := forwardedTotal(t, nodes); after != before {
		t.Fatalf("the nodes forwarded %v requests of the routing client", after-before)
	}
	plain := nodes[0].dial(t, "router", password, client.WithRouting(false))
	routeWork(t, plain)
	if forwardedTotal(t, nodes) == before {
		t.Fatal("no request of the client without routing was forwarded")
	}

	for _, c := range []struct {
		name string
		c    *client.Client
	}{{"routing", routed}, {"forwarded", plain}} {
		n, elapsed := registerGrouped(t, c.c, *routeTasks)
		t.Logf("%s: %d grouped registrations through node 1 in %v, %.0f/s", c.name, n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	}

	checkLeaderMove(t, admin, routed)
	checkLeaderKilled(t, admin, routed, nodes)
}

var routeTasks = flag.Int("route.tasks", 2000, "TestClusterRouting: grouped registrations timed with and without routing")

// registerGrouped registers n tasks in 256 groups from 32 callers as
// fast as they are acknowledged, and returns how long it took.
func registerGrouped(t *testing.T, c *client.Client, n int) (int, time.Duration) {
	t.Helper()
	ctx := testContext(t)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := c.Schedule(ctx, nil, client.After(time.Hour), client.InGroup(fmt.Sprint("timed-", i%256))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return n, time.Since(start)
}

// ledElsewhere is a group of the router client whose shard node 1 does
// not lead, with its shard and leader.
type ledElsewhere struct {
	group  string
	shard  uint16
	leader string // node id
	addr   string // its raw TCP address
}

// groupsLedElsewhere asks node 1 for the routing view, as the router
// client, and picks groups on shards the other nodes lead.
func groupsLedElsewhere(t *testing.T, nodes []*server, id, password string) []ledElsewhere {
	t.Helper()
	r := dialRaw(t, nodes[0].tcp)
	sess := r.login(id, password)
	r.send(&boomerangv1.Request{RequestId: 2, SessionId: sess, Body: &boomerangv1.Request_GetRoutes{GetRoutes: &boomerangv1.GetRoutesRequest{}}})
	view := r.read().GetGetRoutes()
	if view.GetStandalone() || view.GetNode() != "1" || view.GetClient() != id || len(view.GetLeaders()) != int(view.GetShards()) {
		t.Fatalf("routing view: %v", view)
	}
	addrs := map[string]string{}
	for _, n := range view.GetNodes() {
		addrs[n.GetId()] = n.GetTcpAddress()
	}
	var out []ledElsewhere
	for i := 0; len(out) < 4 && i < 1000; i++ {
		g := fmt.Sprint("g-", i)
		s := shard.OfGroup(int(view.GetShards()), id, g)
		if leader := view.GetLeaders()[s]; leader != "1" && leader != "" {
			out = append(out, ledElsewhere{group: g, shard: s, leader: leader, addr: addrs[leader]})
		}
	}
	for _, g := range out {
		n, _ := strconv.Atoi(g.leader)
		if g.addr != nodes[n-1].tcp {
			t.Fatalf("node %s's address in the view is %q, it listens on %s", g.leader, g.addr, nodes[n-1].tcp)
		}
	}
	if len(out) < 4 {
		t.Fatalf("node 1 leads nearly every shard: %v", view.GetLeaders())
	}
	return out
}

// checkNotLeaderFrames sends registrations for groups another node leads
// to n: with route, read together, each is answered NOT_LEADER naming
// the leader; without, it is registered.
func checkNotLeaderFrames(t *testing.T, n *server, groups []ledElsewhere, password string) {
	t.Helper()
	r := dialRaw(t, n.tcp)
	sess := r.login("router", password)
	register := func(id uint64, g string, route bool) *boomerangv1.Request {
		return &boomerangv1.Request{RequestId: id, SessionId: sess, Route: route, Body: &boomerangv1.Request_RegisterTask{
			RegisterTask: &boomerangv1.RegisterTaskRequest{Group: g, Payload: []byte("raw"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 3600_000}},
		}}
	}
	var frames []byte
	for i, g := range groups {
		var err error
		if frames, err = appendFrame(frames, register(uint64(10+i), g.group, true)); err != nil {
			t.Fatal(err)
		}
	}
	r.write(frames) // in one write, so the node reads them together
	for range groups {
		resp := r.read()
		g := groups[resp.GetRequestId()-10]
		hint := resp.GetError().GetNotLeader()
		if resp.GetError().GetStatus() != boomerangv1.Status_STATUS_NOT_LEADER || hint.GetLeaderId() != g.leader ||
			hint.GetLeaderTcpAddress() != g.addr || hint.GetShard() != uint32(g.shard) || hint.GetRevision() == 0 {
			t.Fatalf("routed registration in %s: %v, want NOT_LEADER naming node %s at %s", g.group, resp, g.leader, g.addr)
		}
	}
	r.send(register(20, groups[0].group, false))
	if resp := r.read(); resp.GetRegisterTask().GetTask() == nil {
		t.Fatalf("registration without route: %v, want it forwarded and registered", resp)
	}
}

// routeWork schedules tasks in many groups, alone, gathered and in a
// batch, and reads, changes and cancels some of them.
func routeWork(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			opts := []client.ScheduleOption{client.After(time.Hour)}
			if i%4 != 0 { // a quarter ungrouped, without keys: anywhere
				opts = append(opts, client.InGroup(fmt.Sprint("work-", i)))
			}
			task, err := c.Schedule(ctx, []byte("work"), opts...)
			if err == nil {
				_, err = c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: task.GetId()})
			}
			if err == nil && i%2 == 0 {
				_, err = c.UpdateTask(ctx, &boomerangv1.UpdateTaskRequest{Id: task.GetId(), Payload: []byte("changed")})
			}
			if err == nil && i%3 == 0 {
				err = c.Cancel(ctx, task.GetId())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var batch []client.Task
	for i := range 40 {
		batch = append(batch, client.NewTask([]byte("batch"), client.After(time.Hour), client.InGroup(fmt.Sprint("batch-", i))))
	}
	results, err := c.ScheduleBatch(ctx, batch...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("batch task %d: %v", i, r.Err)
		}
	}
}

// forwardedTotal sums boomerang_forwarded_requests_total over the nodes.
func forwardedTotal(t *testing.T, nodes []*server) float64 {
	t.Helper()
	var sum float64
	for _, n := range nodes {
		_, page := get(t, "http://"+n.http+"/metrics")
		sc := bufio.NewScanner(strings.NewReader(page))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "boomerang_forwarded_requests_total{"); ok {
				_, v, _ := strings.Cut(rest, "} ")
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("metric line %q", sc.Text())
				}
				sum += f
			}
		}
	}
	return sum
}

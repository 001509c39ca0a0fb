package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/shard"
)

// checkLeaderMove moves the leadership of a shard while the routing
// client keeps calling for it; none of its calls fails.
func checkLeaderMove(t *testing.T, admin, routed *client.Client) {
	t.Helper()
	sh, shards, from, to := stableMove(t, admin)
	k := keepCalling(t, routed, groupOn(shards, sh))
	k.awaitMore(t, 5)
	if _, err := admin.ChangeCluster(testContext(t), &boomerangv1.ChangeClusterRequest{Change: &boomerangv1.ChangeClusterRequest_Move{
		Move: &boomerangv1.ShardMove{Shard: uint32(sh), To: to},
	}}); err != nil {
		t.Fatal(err)
	}
	awaitLeader(t, admin, sh, func(leader string) bool { return leader == to })
	k.awaitMore(t, 20) // the routing client learns the move from its next calls
	t.Logf("%d calls while shard %d moved from node %s to node %s, none failed", k.end(t), sh, from, to)
}

// checkLeaderKilled kills the node leading a shard (not node 1, which
// the routing client dialed) while the routing client keeps calling for
// it; none of its calls fails.
func checkLeaderKilled(t *testing.T, admin, routed *client.Client, nodes []*server) {
	t.Helper()
	cl, err := admin.GetCluster(testContext(t), &boomerangv1.GetClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var sh uint16
	victim := ""
	for _, s := range cl.GetShards() {
		if l := s.GetLeader(); l != "1" && l != "" {
			sh, victim = uint16(s.GetShard()), l
			break
		}
	}
	if victim == "" {
		t.Fatal("node 1 leads every shard")
	}
	k := keepCalling(t, routed, groupOn(len(cl.GetShards()), sh))
	k.awaitMore(t, 5)
	start := time.Now()
	nodes[victim[0]-'1'].kill()
	awaitLeader(t, admin, sh, func(leader string) bool { return leader != victim && leader != "" })
	k.awaitMore(t, 20)
	t.Logf("%d calls while node %s, leading shard %d, was killed and the shard led again (%v), none failed",
		k.end(t), victim, sh, time.Since(start).Round(time.Millisecond))
}

// groupOn returns a group of the router client on shard sh.
func groupOn(shards int, sh uint16) string {
	for i := 0; ; i++ {
		if g := fmt.Sprint("on-", i); shard.OfGroup(shards, "router", g) == sh {
			return g
		}
	}
}

// awaitLeader waits until node 1 reports a leader of shard sh that ok
// accepts.
func awaitLeader(t *testing.T, admin *client.Client, sh uint16, ok func(leader string) bool) {
	t.Helper()
	waitFor(t, "a new leader of the shard", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl, err := admin.GetCluster(ctx, &boomerangv1.GetClusterRequest{})
		return err == nil && ok(cl.GetShards()[sh].GetLeader())
	})
}

// keptCalls is a routing client scheduling tasks in one group, one after
// another, each with an idempotency key (a registration under way when
// its shard changes leaders is then asked again; without, it would fail
// BUSY, since it may or may not have taken effect), and reading each
// back, until stopped or a call fails.
type keptCalls struct {
	calls atomic.Int64
	stop  chan struct{}
	done  chan error
}

func keepCalling(t *testing.T, c *client.Client, group string) *keptCalls {
	ctx := testContext(t)
	k := &keptCalls{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		for {
			select {
			case <-k.stop:
				k.done <- nil
				return
			default:
			}
			n := k.calls.Load()
			task, err := c.Schedule(ctx, []byte("kept"), client.After(time.Hour), client.InGroup(group), client.WithIdempotencyKey(fmt.Sprint(group, "-", n)))
			if err == nil {
				_, err = c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: task.GetId()})
			}
			if err != nil {
				k.done <- fmt.Errorf("call %d: %w", n, err)
				return
			}
			k.calls.Add(1)
		}
	}()
	return k
}

// awaitMore waits for n more calls, failing the test if one fails.
func (k *keptCalls) awaitMore(t *testing.T, n int64) {
	t.Helper()
	want := k.calls.Load() + n
	waitFor(t, "more calls", func() bool {
		select {
		case err := <-k.done:
			t.Fatal(err)
		default:
		}
		return k.calls.Load() >= want
	})
}

// end stops the calls and returns how many succeeded.
func (k *keptCalls) end(t *testing.T) int64 {
	t.Helper()
	close(k.stop)
	if err := <-k.done; err != nil {
		t.Fatal(err)
	}
	return k.calls.Load()
}

// stableMove picks a shard whose leadership can move from the node
// preferred as the leader of the most shards to the one preferred for
// the fewest without the controller balancing it back: they differ by
// one. It returns the shard, the number of shards, and the nodes.
func stableMove(t *testing.T, admin *client.Client) (uint16, int, string, string) {
	t.Helper()
	cl, err := admin.GetCluster(testContext(t), &boomerangv1.GetClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range cl.GetShards() {
		count[s.GetPreferredLeader()]++
	}
	from, to := "1", "1"
	for id, n := range count {
		if n > count[from] {
			from = id
		}
		if n < count[to] {
			to = id
		}
	}
	if count[from] != count[to]+1 {
		t.Fatalf("preferred leaders %v: want the most and the fewest to differ by one", count)
	}
	for _, s := range cl.GetShards() {
		if s.GetPreferredLeader() == from && s.GetLeader() == from {
			return uint16(s.GetShard()), len(cl.GetShards()), from, to
		}
	}
	t.Fatalf("node %s leads none of the shards it is preferred for", from)
	return 0, 0, "", ""
}

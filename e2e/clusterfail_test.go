package e2e

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/history"
	"github.com/boomerangd/boomerang/internal/store"
)

// The cluster failure suite: real boomerang processes and boomerang etcd
// on loopback, the load generator (clusterfail_load_test.go) driving
// every node, one fault per scenario, and the history checker
// (internal/history) judging what the receiver saw. A scenario runs its
// fault once (the short version, in make test) or over and over for
// -cluster.long. A violation names the seed: rerun it with
// -cluster.seed.
var (
	clusterLong = flag.Duration("cluster.long", 0, "failure suite: repeat each scenario's fault for this long")
	clusterSeed = flag.Uint64("cluster.seed", 0, "failure suite: seed (default: one per scenario)")
	clusterLogs = flag.String("cluster.logs", "", "failure suite: append every node's log to a file in this directory")
)

// scenario is one run of the suite: a cluster, its load and its history.
type scenario struct {
	t    *testing.T
	c    *fcluster
	rng  *rand.Rand
	seed uint64
	hist *history.History
	load *loadgen
}

// runScenario starts n nodes (prepare may change each before it starts),
// puts them under load, runs fault until the suite's duration is over
// (at least once), then waits until every acknowledged task is delivered
// and checks the history.
func runScenario(t *testing.T, n int, prepare func(*fnode), fault func(s *scenario)) {
	seed := *clusterSeed
	if seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(t.Name()))
		seed = h.Sum64()
	}
	t.Logf("seed %d (rerun with -cluster.seed %d)", seed, seed)
	c := &fcluster{t: t, etcd: startFetcd(t)}
	for range n {
		nd := c.addNode()
		if prepare != nil {
			prepare(nd)
		}
		c.start(nd)
	}
	c.settle(min(n, 3))
	s := &scenario{t: t, c: c, rng: rand.New(rand.NewPCG(seed, 1)), seed: seed, hist: &history.History{}}
	s.load = startLoad(t, c, s.hist, startHistoryReceiver(t, s.hist), seed)
	s.awaitDeliveries(20)
	end := time.Now().Add(*clusterLong)
	for first := true; first || time.Now().Before(end); first = false {
		fault(s)
		s.awaitDeliveries(20)
	}
	s.load.halt()
	s.finish()
}

// awaitDeliveries waits until n more deliveries arrived: the cluster
// fires again.
func (s *scenario) awaitDeliveries(n int) {
	s.t.Helper()
	_, before := s.hist.Counts()
	waitFor(s.t, "deliveries", func() bool { _, now := s.hist.Counts(); return now >= before+n })
}

// finish waits until every acknowledged task is delivered and every
// asked due time is past, then checks the history.
func (s *scenario) finish() {
	s.t.Helper()
	limit := time.Now().Add(3 * waitLimit)
	for len(s.hist.Pending()) > 0 && time.Now().Before(limit) {
		s.awaitAnyDelivery(limit)
	}
	acked, delivered := s.hist.Counts()
	s.t.Logf("%d registrations acknowledged, %d deliveries, fire lateness %s", acked, delivered, lateness(s.hist.Deliveries()))
	if p := s.hist.Pending(); len(p) > 0 {
		s.t.Logf("%d acknowledged tasks still undelivered after %v, e.g. %+v", len(p), 3*waitLimit, p[0])
		shard := store.ShardOf(p[0].ID)
		s.t.Logf("what the nodes logged about shard %d:\n%s", shard, strings.Join(s.c.shardLines(shard, 200), "\n"))
		for _, r := range p[:min(len(p), 3)] {
			s.t.Logf("what the cluster says of task %d:\n%s", r.ID, s.explain(r))
		}
	}
	v := s.hist.Check()
	for i, x := range v {
		if i == 20 {
			s.t.Errorf("and %d more", len(v)-i)
			break
		}
		s.t.Errorf("seed %d: %v", s.seed, x)
	}
}

// awaitAnyDelivery waits for the next delivery or the limit.
func (s *scenario) awaitAnyDelivery(limit time.Time) {
	_, before := s.hist.Counts()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if _, now := s.hist.Counts(); now > before || time.Now().After(limit) {
			return
		}
	}
}

// lateness summarizes how long after their fire time first attempts
// arrived.
func lateness(ds []history.Delivery) string {
	var late []time.Duration
	for _, d := range ds {
		if d.Attempt == 1 {
			late = append(late, d.Arrived.Sub(time.UnixMilli(d.FireAt)))
		}
	}
	return "p50 " + percentile(late, 50).String() + ", p99 " + percentile(late, 99).String()
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Millisecond)
}

// failovers collects every failover time the suite measured, for the
// numbers in docs/cluster.md.
var failovers struct {
	sync.Mutex
	all []time.Duration
}

func noteFailover(t *testing.T, what string, d time.Duration) {
	failovers.Lock()
	failovers.all = append(failovers.all, d)
	all := slices.Clone(failovers.all)
	failovers.Unlock()
	t.Logf("%s: every shard led by another node after %v; the %d failovers so far: p50 %v, p99 %v", what, d.Round(time.Millisecond),
		len(all), percentile(all, 50), percentile(all, 99))
}

// explain asks the cluster what it holds of an undelivered task (its
// record, its attempts, its dead letter and its group, each answer or
// error on a line) and adds the updates and cancels tried on it.
func (s *scenario) explain(r history.Registration) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := s.c.any()
	line := func(what string, m fmt.Stringer, err error) string {
		if err != nil {
			return what + ": " + err.Error()
		}
		return what + ": " + m.String()
	}
	task, err := cl.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: r.ID})
	out := []string{line("task", task, err)}
	attempts, err := cl.GetTaskAttempts(ctx, &boomerangv1.GetTaskAttemptsRequest{Id: r.ID})
	out = append(out, line("attempts", attempts, err))
	dead, err := cl.GetDeadLetter(ctx, &boomerangv1.GetDeadLetterRequest{Id: r.ID})
	out = append(out, line("dead letter", dead, err))
	if r.Group != "" {
		group, err := cl.GetGroup(ctx, &boomerangv1.GetGroupRequest{Client: s.load.client, Group: r.Group})
		out = append(out, line("group", group, err))
	}
	updates, cancels := s.hist.About(r.ID)
	for _, u := range updates {
		out = append(out, fmt.Sprintf("update to %d sent %s: acknowledged %t", u.Due, u.Sent.Format("15:04:05.000"), u.Acked))
	}
	for _, x := range cancels {
		out = append(out, fmt.Sprintf("cancel sent %s: %s", x.Sent.Format("15:04:05.000"), x.Outcome))
	}
	return strings.Join(out, "\n")
}

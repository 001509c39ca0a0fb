package scheduler

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

var (
	clusterLong = flag.Bool("scheduler.cluster.long", false, "run TestClusterKeepsEveryPromise for minutes instead of seconds")
	clusterSeed = flag.Uint64("scheduler.cluster.seed", 0, "seed of TestClusterKeepsEveryPromise (0: from the clock)")
)

// TestClusterKeepsEveryPromise runs three schedulers replicating every
// shard over a faulty in-process network, while clients register and
// cancel tasks and a chaos loop cuts leaders off, cuts nodes' power and
// makes the network drop, duplicate, delay and reorder messages. The
// history of what clients were told and what receivers saw is then
// checked (see checkHistory).
func TestClusterKeepsEveryPromise(t *testing.T) {
	seed := *clusterSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -scheduler.cluster.seed=%d)", seed, seed)
	rounds := 8
	if *clusterLong {
		rounds = 400
	}
	nets := map[string]func(t *testing.T) clusterNet{
		"local": func(*testing.T) clusterNet { return localClusterNet{replica.NewLocalNetwork(seed)} },
		"tcp":   func(t *testing.T) clusterNet { return newTCPClusterNet(t, seed) },
	}
	for _, name := range []string{"local", "tcp"} {
		t.Run(name, func(t *testing.T) {
			c := startCluster(t, seed, nets[name](t))
			defer c.stop()

			// Clients work while the chaos lasts.
			var clients sync.WaitGroup
			calm := make(chan struct{})
			for g := range clusterGroups {
				clients.Go(func() { c.client(g, calm) })
			}
			c.chaos(rounds)
			close(calm)
			clients.Wait()
			c.heal()
			c.awaitDelivered()
			evs := c.hist.events()
			checkHistory(t, evs)
			checkRates(t, evs)
			logHistory(t, evs)
		})
	}
}

// checkRates checks that no leader started more attempts of the
// rate-limited group than its limit allows. A new leader counts only the
// attempts whose outcome was committed, so the check is per term. The
// receiver reads the clock a moment after the scheduler stamps the start,
// and a preemption or a collector's pause between the two can stretch
// that moment, hence the slack.
func checkRates(t *testing.T, evs []event) {
	t.Helper()
	const slackMs = 10
	starts := map[[2]uint64][]event{} // by node and term
	ends := map[int]event{}           // by their attempt's place
	for _, e := range evs {
		switch {
		case e.kind == evStart && e.group == clusterRatedGroup:
			k := [2]uint64{e.node, e.term}
			starts[k] = append(starts[k], e)
		case e.kind == evEnd:
			ends[e.start] = e
		}
	}
	total := 0
	for k, s := range starts {
		total += len(s)
		for i := clusterRate.Max; i < len(s); i++ {
			if gap := s[i].wallMs - s[i-clusterRate.Max].wallMs; gap < clusterRate.Per.Milliseconds()-slackMs {
				var window []string
				for _, e := range s[i-clusterRate.Max : i+1] {
					window = append(window, fmt.Sprintf("%s attempt %d at %d ms (leased %v, answered ok %v)",
						e.token, e.attempt, e.wallMs, e.leased, ends[e.at].ok))
				}
				t.Fatalf("node %d term %d started %d attempts of group %s within %d ms; its limit is %d per %v: %s",
					k[0], k[1], clusterRate.Max+1, clusterRatedGroup, gap, clusterRate.Max, clusterRate.Per, strings.Join(window, "; "))
			}
		}
	}
	if total == 0 {
		t.Fatalf("no attempts of group %s", clusterRatedGroup)
	}
}

// logHistory summarizes what the run did.
func logHistory(t *testing.T, evs []event) {
	starts, terms, byNode := 0, map[uint64]bool{}, map[uint64]int{}
	for _, e := range evs {
		if e.kind == evStart {
			starts++
			terms[e.term] = true
			byNode[e.node]++
		}
	}
	t.Logf("%d events, %d attempts in %d terms, attempts by node %v", len(evs), starts, len(terms), byNode)
}

const (
	clusterNodes  = 3
	clusterGroups = 6
	clusterShards = 8
	// clusterRatedGroup starts at most clusterRate attempts: checkRates
	// holds each leader to it.
	clusterRatedGroup = "g0"
)

var clusterRate = RateLimit{Max: 3, Per: 40 * time.Millisecond}

type clusterNode struct {
	id uint64
	fs *store.MemFS
	st *store.Store
	s  *Scheduler
	up bool
}

type cluster struct {
	t     *testing.T
	nw    clusterNet
	hist  *history
	peers []uint64

	mu    sync.Mutex // guards nodes and rng
	nodes []*clusterNode
	rng   *rand.Rand
}

func startCluster(t *testing.T, seed uint64, nw clusterNet) *cluster {
	c := &cluster{
		t: t, nw: nw, hist: &history{},
		rng: rand.New(rand.NewPCG(seed, seed>>1|1)),
	}
	for id := range uint64(clusterNodes) {
		c.peers = append(c.peers, id+1)
	}
	for _, id := range c.peers {
		n := &clusterNode{id: id, fs: store.NewMemFS()}
		c.nodes = append(c.nodes, n)
		c.boot(n)
	}
	return c
}

// boot starts n's scheduler on its filesystem and joins it to the network.
func (c *cluster) boot(n *clusterNode) {
	c.mu.Lock()
	fs := n.fs
	c.mu.Unlock()
	st, err := store.Open("/data", store.Options{FS: fs, Shards: clusterShards})
	if err != nil {
		c.t.Fatal(err)
	}
	var s *Scheduler // set before Start, so before any delivery
	del := c.hist.deliverer(n.id, func() *replica.Node { return s.Node() }, c.intn)
	s, err = New(Config{
		Store: st, Deliverer: del, Partitions: 2,
		NodeID: n.id, Peers: c.peers, Transport: c.nw.transport(n.id), RaftTick: 20 * time.Millisecond,
		Retry: FixedRetry{Attempts: 20, Delay: 5 * time.Millisecond},
		GroupRate: func(_, group string) RateLimit {
			if group == clusterRatedGroup {
				return clusterRate
			}
			return RateLimit{}
		},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	c.nw.join(n.id, s.Node())
	c.mu.Lock()
	n.st, n.s, n.up = st, s, true
	c.mu.Unlock()
}

// powerCut cuts the power of nodes at once: they leave the network,
// their receivers hear nothing more from them, and their disks keep only
// what was synced. Then they boot again.
func (c *cluster) powerCut(nodes ...*clusterNode) {
	for _, n := range nodes {
		c.nw.Isolate(n.id, true)
		c.hist.silence(n.id)
	}
	afters := make([]*store.MemFS, len(nodes))
	for i, n := range nodes {
		afters[i] = n.fs.Crash()
	}
	for i, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = n.s.Stop(ctx)
		c.nw.leave(n.id)
		if err := n.st.Close(); err != nil {
			c.t.Fatal(err)
		}
		c.mu.Lock()
		n.fs, n.up = afters[i], false
		c.mu.Unlock()
	}
	for _, n := range nodes {
		c.hist.unsilence(n.id)
		c.boot(n)
		c.nw.Isolate(n.id, false)
	}
}

func (c *cluster) intn(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.IntN(n)
}

// chaos does one fault a round: a leader or a random node cut off for a
// while, a power cut of one node or, now and then, of all of them, or a
// spell of lossy network.
func (c *cluster) chaos(rounds int) {
	for range rounds {
		victim := c.nodes[c.intn(len(c.nodes))]
		switch c.intn(9) {
		case 8:
			c.powerCut(c.nodes...)
		case 0, 1, 2, 3:
			c.nw.Isolate(victim.id, true)
			c.pause(300)
			c.nw.Isolate(victim.id, false)
		case 4, 5:
			c.powerCut(victim)
		case 6, 7:
			c.nw.SetFaults(replica.Faults{Drop: 0.05, Duplicate: 0.05, Reorder: 0.05, MaxDelay: 5 * time.Millisecond})
			c.pause(300)
			c.nw.SetFaults(replica.Faults{})
		}
		c.pause(200)
	}
}

// pause lets the cluster run for up to ms milliseconds: the chaos loop's
// rhythm, not a synchronization.
func (c *cluster) pause(ms int) { time.Sleep(time.Duration(1+c.intn(ms)) * time.Millisecond) }

func (c *cluster) heal() {
	c.nw.SetFaults(replica.Faults{})
	for _, n := range c.nodes {
		c.nw.Isolate(n.id, false)
	}
}

// call runs op against the nodes in turn, from a random one, until one
// answers other than ErrNotLeader or ErrClosed, or the time is up.
func (c *cluster) call(op func(s *Scheduler, ctx context.Context) error) error {
	var err error
	if testwait.Until(waitLimit, func() bool {
		var answered bool
		answered, err = c.callOnce(op)
		return answered
	}) {
		return err
	}
	return fmt.Errorf("no node answered in time: %w", err)
}

// callOnce runs op against the nodes that are up, from a random one, and
// returns the first answer other than ErrNotLeader or ErrClosed, or, not
// answered, the last refusal.
func (c *cluster) callOnce(op func(s *Scheduler, ctx context.Context) error) (answered bool, err error) {
	c.mu.Lock()
	first := c.rng.IntN(len(c.nodes))
	var ss []*Scheduler
	for i := range c.nodes {
		if n := c.nodes[(first+i)%len(c.nodes)]; n.up {
			ss = append(ss, n.s)
		}
	}
	c.mu.Unlock()
	err = ErrClosed // no node is up
	for _, s := range ss {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = op(s, ctx)
		cancel()
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
			return true, err
		}
	}
	return false, err
}

// client registers tasks in its group until calm, one after another, due
// in the order registered, and now and then a task it cancels at once.
// Every registration carries an idempotency key, so that one repeated
// after an uncertain answer creates no second task.
func (c *cluster) client(g int, calm <-chan struct{}) {
	group := fmt.Sprint("g", g)
	lastDue := int64(0)
	for k := 0; ; k++ {
		select {
		case <-calm:
			return
		default:
		}
		c.pause(20)
		token := fmt.Sprintf("%s-%d", group, k)
		due := max(lastDue+1, time.Now().UnixMilli()+int64(c.intn(20)))
		lastDue = due
		var id uint64
		err := c.call(func(s *Scheduler, ctx context.Context) error {
			v, _, err := s.Register(ctx, RegisterRequest{Client: "acme", Group: group, Payload: []byte(token),
				At: time.UnixMilli(due), IdempotencyKey: token})
			id = v.Task.GetId()
			return err
		})
		if err != nil {
			c.t.Errorf("register %s: %v", token, err)
			return
		}
		c.hist.add(event{kind: evRegistered, id: id, token: token, group: group, order: k})
		if c.intn(3) == 0 {
			c.ungrouped(group, k)
		}
	}
}

// ungrouped registers an ungrouped task due within half a second, and
// cancels every other one at once.
func (c *cluster) ungrouped(group string, k int) {
	token := fmt.Sprintf("%s-alone-%d", group, k)
	delay := time.Duration(c.intn(500)) * time.Millisecond
	var id uint64
	err := c.call(func(s *Scheduler, ctx context.Context) error {
		v, _, err := s.Register(ctx, RegisterRequest{Client: "acme", Payload: []byte(token), Delay: delay, IdempotencyKey: token})
		id = v.Task.GetId()
		return err
	})
	if err != nil {
		c.t.Errorf("register %s: %v", token, err)
		return
	}
	c.hist.add(event{kind: evRegistered, id: id, token: token, order: -1})
	if k%2 == 0 {
		return
	}
	err = c.call(func(s *Scheduler, ctx context.Context) error { return s.Cancel(ctx, Caller{Client: "acme"}, id) })
	switch {
	case err == nil:
		c.hist.add(event{kind: evCancelled, id: id, token: token})
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInFlight):
		// Delivered already, or being delivered; or an earlier, uncertain
		// try took effect. The history can tell which.
		c.hist.add(event{kind: evCancelUnsure, id: id, token: token})
	default:
		c.t.Errorf("cancel %s: %v", token, err)
	}
}

// awaitDelivered waits until every registered task that was not
// cancelled was delivered.
func (c *cluster) awaitDelivered() {
	c.t.Helper()
	testwait.Err(c.t, 2*waitLimit, "every acknowledged registration delivered", func() error {
		if missing := c.hist.undelivered(); len(missing) > 0 {
			return fmt.Errorf("%d never delivered, such as %v", len(missing), missing[:min(5, len(missing))])
		}
		return nil
	})
}

func (c *cluster) stop() {
	// Together, so that every node's outcomes can still commit while the
	// others drain.
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if !n.up {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := n.s.Stop(ctx); err != nil {
				c.t.Errorf("node %d Stop: %v", n.id, err)
			}
		})
	}
	wg.Wait()
	for _, n := range c.nodes {
		if n.up {
			if err := n.st.Close(); err != nil {
				c.t.Errorf("node %d store Close: %v", n.id, err)
			}
		}
	}
	c.nw.Close()
	c.hist.wait()
}

// The history.

type eventKind uint8

const (
	evRegistered   eventKind = iota // a client was told its task is registered
	evCancelled                     // a client was told its cancel took effect
	evCancelUnsure                  // a cancel found the task gone or in flight
	evStart                         // a receiver was handed an attempt
	evEnd                           // a receiver answered it
)

type event struct {
	kind    eventKind
	id      uint64
	token   string // the payload
	group   string
	order   int // a grouped task's place in its group; -1 for none
	node    uint64
	term    uint64
	ok      bool
	leased  bool  // the node held the shard's lease when it started the attempt
	attempt int   // an attempt's number
	wallMs  int64 // an attempt: when the receiver was handed it
	at      int   // place in the history
	start   int   // an answer's attempt: its place in the history
}

// history is what clients were told and what receivers saw, in the order
// it happened.
type history struct {
	mu       sync.Mutex
	evs      []event
	silenced map[uint64]bool // nodes without power: what they send is lost
	pending  sync.WaitGroup  // answers not yet given
}

func (h *history) add(e event) {
	h.mu.Lock()
	e.at = len(h.evs)
	h.evs = append(h.evs, e)
	h.mu.Unlock()
}

func (h *history) events() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.evs)
}

func (h *history) silence(node uint64) {
	h.mu.Lock()
	if h.silenced == nil {
		h.silenced = map[uint64]bool{}
	}
	h.silenced[node] = true
	h.mu.Unlock()
}

func (h *history) unsilence(node uint64) {
	h.mu.Lock()
	delete(h.silenced, node)
	h.mu.Unlock()
}

// deliverer is a node's receivers: each attempt is answered after up to
// 3 ms, and one in ten fails. An attempt from a node whose power is cut
// never reaches a receiver. The time an attempt reached its receiver is
// read before anything else, so that no wait for the history's lock
// counts in it.
func (h *history) deliverer(node uint64, replicas func() *replica.Node, intn func(int) int) Deliverer {
	return DelivererFunc(func(d Delivery, done func(error)) {
		handed := time.Now().UnixMilli()
		// The attempt was sent just now; a lease that ended over a few
		// milliseconds ago was not held then.
		leased := time.Until(replicas().LeaseExpiry(store.ShardOf(d.Task.Id))) > -5*time.Millisecond
		h.mu.Lock()
		if h.silenced[node] {
			h.mu.Unlock()
			return
		}
		e := event{kind: evStart, id: d.Task.Id, token: string(d.Task.Payload), group: d.Task.Group, node: node, term: d.Term, leased: leased,
			attempt: d.Attempt, wallMs: handed, at: len(h.evs)}
		h.evs = append(h.evs, e)
		h.pending.Add(1)
		h.mu.Unlock()
		ok := intn(10) != 0
		time.AfterFunc(time.Duration(intn(3000))*time.Microsecond, func() {
			defer h.pending.Done()
			e.kind, e.ok, e.start = evEnd, ok, e.at
			h.add(e)
			if ok {
				done(nil)
			} else {
				done(errRefused)
			}
		})
	})
}

// wait waits for the receivers' last answers.
func (h *history) wait() { h.pending.Wait() }

// undelivered lists the tokens registered, not cancelled, and not yet
// delivered.
func (h *history) undelivered() []string {
	// The events so far never change: they are read without the lock, so
	// that the receivers, which take it, do not wait for the scan.
	h.mu.Lock()
	evs := h.evs
	h.mu.Unlock()
	state := map[string]int{} // 1 registered, 2 done
	for _, e := range evs {
		switch {
		case e.kind == evRegistered && state[e.token] == 0:
			state[e.token] = 1
		case e.kind == evCancelled, e.kind == evCancelUnsure, e.kind == evEnd && e.ok:
			state[e.token] = 2
		}
	}
	var out []string
	for token, st := range state {
		if st == 1 {
			out = append(out, token)
		}
	}
	slices.Sort(out)
	return out
}

// checkHistory checks the promises:
//   - only a node holding the shard's lease starts attempts;
//   - every task id names one registration: ids are never reused;
//   - no attempt starts after its task's cancel was acknowledged;
//   - a group's tasks are delivered in their order, each only once the
//     one before it was delivered: a task delivered again after its
//     successor started would break the order;
//   - a group has one attempt in flight at a time, among the attempts a
//     receiver that fences by term accepts (one whose term is not below
//     the highest it has seen for the group when it starts): a deposed
//     leader's attempt may still be under way when its successor starts,
//     with a lower term, which is what the term is for.
func checkHistory(t *testing.T, evs []event) {
	t.Helper()
	tokenOf := map[uint64]string{}
	cancelled := map[uint64]int{}
	for _, e := range evs {
		if e.kind == evRegistered || e.kind == evStart {
			if prev, ok := tokenOf[e.id]; ok && prev != e.token {
				t.Fatalf("task id %#x names %q and %q", e.id, prev, e.token)
			}
			tokenOf[e.id] = e.token
		}
		if e.kind == evCancelled {
			cancelled[e.id] = e.at
		}
	}
	orderOf := map[string]int{}
	for _, e := range evs {
		if e.kind == evRegistered {
			orderOf[e.token] = e.order
		}
	}
	maxTerm := map[string]uint64{}
	started := map[string]int{}      // group: the furthest place started
	delivered := map[string]int{}    // group: its first tasks delivered, as a count
	inFlight := map[string][]event{} // group: accepted attempts under way
	for _, e := range evs {
		switch e.kind {
		case evStart:
			if !e.leased {
				t.Fatalf("task %#x (%s) started on node %d, which did not hold the lease of its shard", e.id, e.token, e.node)
			}
			if at, ok := cancelled[e.id]; ok && at < e.at {
				t.Fatalf("task %#x (%s) started on node %d after its cancel was acknowledged", e.id, e.token, e.node)
			}
			if e.group == "" || e.term < maxTerm[e.group] {
				continue // ungrouped, or fenced
			}
			maxTerm[e.group] = e.term
			order := orderOf[e.token]
			if order < started[e.group] {
				t.Fatalf("group %s: %s started again after task %d had started", e.group, e.token, started[e.group])
			}
			if order > delivered[e.group] {
				t.Fatalf("group %s: %s started before task %d was delivered", e.group, e.token, delivered[e.group])
			}
			started[e.group] = order
			for _, o := range inFlight[e.group] {
				if o.term == e.term {
					t.Fatalf("group %s: %s started on node %d in term %d while %s was in flight on node %d", e.group, e.token, e.node, e.term, o.token, o.node)
				}
			}
			inFlight[e.group] = append(inFlight[e.group], e)
		case evEnd:
			if e.group == "" {
				continue
			}
			inFlight[e.group] = slices.DeleteFunc(inFlight[e.group], func(o event) bool { return o.at == e.start })
			if e.ok && orderOf[e.token] == delivered[e.group] {
				delivered[e.group]++
			}
		}
	}
}

// An ungrouped task registered on any node that leads some shard lands on
// a shard that node leads, so no node refuses one while it leads.
func TestUngroupedTasksGoWhereTheNodeLeads(t *testing.T) {
	c := startCluster(t, 1, localClusterNet{replica.NewLocalNetwork(1)})
	defer c.stop()
	led := func(s *Scheduler) []uint16 {
		var out []uint16
		for shard := range uint16(clusterShards) {
			if s.Node().Leased(shard) {
				out = append(out, shard)
			}
		}
		return out
	}
	waitUntil(t, waitLimit, "a leased leader for every shard", func() bool {
		total := 0
		for _, n := range c.nodes {
			total += len(led(n.s))
		}
		return total == clusterShards
	})
	for _, n := range c.nodes {
		mine := led(n.s)
		for range 2 * clusterShards {
			v, _, err := n.s.Register(context.Background(), RegisterRequest{Client: "c", Payload: []byte("x"), Delay: time.Hour})
			if len(mine) == 0 {
				if !errors.Is(err, ErrNotLeader) {
					t.Fatalf("node %d leads nothing, and Register answered %v", n.id, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("node %d leads shards %v, and Register failed: %v", n.id, mine, err)
			}
			if shard := store.ShardOf(v.Task.Id); !slices.Contains(mine, shard) {
				t.Fatalf("node %d placed a task on shard %d; it leads %v", n.id, shard, mine)
			}
		}
	}
}

// waitUntil waits until cond, which nothing signals, holds, failing tb
// after limit.
func waitUntil(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	testwait.For(tb, limit, what, cond)
}

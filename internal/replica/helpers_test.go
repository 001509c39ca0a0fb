package replica

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
	"github.com/boomerangd/boomerang/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 20 * time.Second

// recorder is a state machine that keeps, per shard, the data of every
// entry applied, and writes its applied index to the store as the
// scheduler does, so that the log can be truncated and replayed.
type recorder struct {
	st *store.Store

	mu       sync.Mutex
	node     *Node
	applied  map[uint16][]string // data of non-empty entries, in order
	index    map[uint16]uint64
	lead     map[uint16]uint64 // term this node leads in; 0: not
	restored map[uint16]uint64 // the index of the last snapshot restored
	dropped  map[uint16]bool   // shards no longer hosted
	changed  *sync.Cond
}

func newRecorder(st *store.Store) *recorder {
	r := &recorder{st: st, applied: map[uint16][]string{}, index: map[uint16]uint64{}, lead: map[uint16]uint64{}, restored: map[uint16]uint64{}, dropped: map[uint16]bool{}}
	r.changed = sync.NewCond(&r.mu)
	return r
}

func (r *recorder) AppliedIndex(shard uint16) (uint64, error) {
	m, err := r.st.ShardMeta(shard)
	return m.GetApplied(), err
}

func (r *recorder) Apply(committed []Committed) {
	for _, c := range committed {
		r.apply(c.Shard, c.Entries)
	}
}

func (r *recorder) apply(shard uint16, entries []*raftpb.Entry) {
	b := r.st.NewBatch()
	last := entries[len(entries)-1].GetIndex()
	if err := b.PutShardMeta(shard, &storepb.ShardMeta{Applied: last}); err != nil {
		panic(err)
	}
	if err := r.st.CommitNoSync(b); err != nil {
		return // the store is closing under a stopped node
	}
	r.mu.Lock()
	for _, e := range entries {
		if e.GetIndex() <= r.index[shard] {
			panic(fmt.Sprintf("shard %d: entry %d applied after %d", shard, e.GetIndex(), r.index[shard]))
		}
		r.index[shard] = e.GetIndex()
		if len(e.Data) > 0 {
			r.applied[shard] = append(r.applied[shard], string(e.Data))
		}
	}
	node := r.node
	r.changed.Broadcast()
	r.mu.Unlock()
	if node != nil {
		node.Applied(shard, last)
	}
}

func (r *recorder) Lead(shard uint16, term uint64) {
	r.mu.Lock()
	r.lead[shard] = term
	r.changed.Broadcast()
	r.mu.Unlock()
}

func (r *recorder) Leased(uint16) {}

// Restore writes the snapshot at once: the recorder applies on the
// node's loop, so everything before is applied. Entries before the
// snapshot's are then unknown: applied starts again after it.
func (r *recorder) Restore(shard uint16, write func() error) {
	if err := write(); err != nil {
		return
	}
	m, err := r.st.ShardMeta(shard)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.index[shard] = m.GetApplied()
	r.applied[shard] = nil
	r.restored[shard] = m.GetApplied()
	r.changed.Broadcast()
	r.mu.Unlock()
}

// Drop deletes the shard at once, as Restore writes: the recorder
// applies on the node's loop.
func (r *recorder) Drop(shard uint16, write func() error) {
	if err := write(); err != nil {
		return
	}
	r.mu.Lock()
	delete(r.index, shard)
	delete(r.applied, shard)
	delete(r.lead, shard)
	r.dropped[shard] = true
	r.changed.Broadcast()
	r.mu.Unlock()
}

// await waits until cond holds, reading the recorder under its lock.
func (r *recorder) await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	timer := time.AfterFunc(waitLimit, func() {
		r.mu.Lock()
		r.changed.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(waitLimit)
	r.mu.Lock()
	defer r.mu.Unlock()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		r.changed.Wait()
	}
}

func (r *recorder) count(shard uint16) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.applied[shard])
}

func (r *recorder) entries(shard uint16) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.applied[shard])
}

// replica is one node of a test cluster with its store and recorder.
type replica struct {
	id   uint64
	fs   *store.MemFS
	st   *store.Store
	rec  *recorder
	node *Node
	nw   network
}

// startReplica opens a store on fs and runs a node on it, reachable over
// nw when the node has peers. Options change the node's configuration.
func startReplica(t testing.TB, id uint64, peers []uint64, shards []uint16, fs *store.MemFS, nw network, opts ...func(*Config)) *replica {
	t.Helper()
	st, err := store.Open("/data", store.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{id: id, fs: fs, st: st, rec: newRecorder(st), nw: nw}
	cfg := Config{ID: id, Peers: peers, Shards: shards, Store: st, StateMachine: r.rec, Tick: 10 * time.Millisecond, CompactEvery: 16}
	if os.Getenv("REPLICA_DEBUG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
	}
	join := func(*Node) {}
	if nw != nil {
		cfg.Transport, join = nw.attach(t, id)
	}
	for _, o := range opts {
		o(&cfg)
	}
	r.node, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.rec.node = r.node
	join(r.node)
	if err := r.node.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// stop stops the node, takes it off the network and closes its store.
func (r *replica) stop(t testing.TB) {
	t.Helper()
	r.node.Stop()
	if r.nw != nil {
		r.nw.leave(r.id)
	}
	if err := r.st.Close(); err != nil {
		t.Fatal(err)
	}
}

// cluster is a test cluster's replicas.
type cluster struct {
	t  testing.TB
	rs []*replica
}

// startCluster starts three replicas of the shards on nw.
func startCluster(t testing.TB, nw network, shards []uint16, opts ...func(*Config)) *cluster {
	t.Helper()
	peers := []uint64{1, 2, 3}
	c := &cluster{t: t}
	for _, id := range peers {
		c.rs = append(c.rs, startReplica(t, id, peers, shards, store.NewMemFS(), nw, opts...))
	}
	return c
}

// stop stops every replica.
func (c *cluster) stop() {
	for _, r := range c.rs {
		r.stop(c.t)
	}
}

// leader returns the replica leading shard, waiting for one.
func (c *cluster) leader(shard uint16) *replica {
	c.t.Helper()
	return c.awaitLeader(shard, func(*replica) bool { return true })
}

// awaitLeader waits until a replica that ok accepts leads shard.
func (c *cluster) awaitLeader(shard uint16, ok func(*replica) bool) *replica {
	c.t.Helper()
	var leader *replica
	testwait.For(c.t, waitLimit, fmt.Sprintf("a leader of shard %d", shard), func() bool {
		for _, r := range c.rs {
			r.rec.mu.Lock()
			leads := r.rec.lead[shard] > 0
			r.rec.mu.Unlock()
			if leads && ok(r) {
				leader = r
				return true
			}
		}
		return false
	})
	return leader
}

// commit proposes n numbered entries on every shard through its leader
// (never one of skip), proposing again what a change of leader dropped,
// until a leader has applied them all.
func (c *cluster) commit(prefix string, n int, skip ...*replica) {
	c.t.Helper()
	ok := func(r *replica) bool { return !slices.Contains(skip, r) }
	for _, sh := range c.shards() {
		want := batch{prefix, n}.entries(sh)
		deadline := time.Now().Add(waitLimit)
		for {
			l := c.awaitLeader(sh, ok)
			missing := slices.DeleteFunc(slices.Clone(want), func(d string) bool { return slices.Contains(l.rec.entries(sh), d) })
			if len(missing) == 0 {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("shard %d: %d entries never committed", sh, len(missing))
			}
			for _, d := range missing {
				_ = l.node.Propose(sh, []byte(d))
			}
			l.rec.await(c.t, "progress", func() bool {
				return slices.Contains(l.rec.applied[sh], missing[len(missing)-1]) || l.rec.lead[sh] == 0 || time.Now().After(deadline)
			})
		}
	}
}

// converge waits until every replica applied the same entries on every
// shard.
func (c *cluster) converge() {
	c.t.Helper()
	for _, sh := range c.shards() {
		if testwait.Until(waitLimit, func() bool { return c.agree(sh) }) {
			continue
		}
		for _, r := range c.rs {
			c.t.Logf("replica %d shard %d: %d entries; %s", r.id, sh, len(r.rec.entries(sh)), r.status(sh))
		}
		c.t.Fatalf("shard %d: the replicas never agreed", sh)
	}
}

// agree reports whether every replica applied shard's log up to the
// same index, with the same entries. A replica that restored a snapshot
// knows only the entries after it: they must end the others' lists.
func (c *cluster) agree(shard uint16) bool {
	index := make(map[uint64]bool)
	for _, r := range c.rs {
		r.rec.mu.Lock()
		index[r.rec.index[shard]] = true
		r.rec.mu.Unlock()
	}
	if len(index) != 1 {
		return false
	}
	longest := c.longest(shard)
	for _, r := range c.rs {
		es := r.rec.entries(shard)
		if !slices.Equal(es, longest[len(longest)-len(es):]) {
			return false
		}
	}
	return true
}

// batch names the entries commit proposes: n on each shard.
type batch struct {
	prefix string
	n      int
}

func (b batch) entries(shard uint16) []string {
	out := make([]string, b.n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d-%03d", b.prefix, shard, i)
	}
	return out
}

// caughtUp waits until the batches are applied and every replica, r
// included, agrees on the log (see agree).
func (c *cluster) caughtUp(r *replica, batches ...batch) {
	c.t.Helper()
	for _, sh := range c.shards() {
		var want []string
		for _, b := range batches {
			want = append(want, b.entries(sh)...)
		}
		waitFor(c.t, fmt.Sprintf("replica %d to catch up on shard %d", r.id, sh), func() bool {
			return isSubset(want, c.longest(sh)) && c.agree(sh)
		})
	}
}

// longest returns the longest list of entries of shard a replica applied.
func (c *cluster) longest(shard uint16) []string {
	var out []string
	for _, r := range c.rs {
		if es := r.rec.entries(shard); len(es) > len(out) {
			out = es
		}
	}
	return out
}

func isSubset(want, have []string) bool {
	return !slices.ContainsFunc(want, func(d string) bool { return !slices.Contains(have, d) })
}

func (c *cluster) shards() []uint16 { return c.rs[0].node.cfg.Shards }

// status describes what r's node knows of shard, for a failure message.
func (r *replica) status(shard uint16) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := r.node.Status(ctx)
	if err != nil {
		return err.Error()
	}
	for _, s := range st {
		if s.Shard == shard {
			return fmt.Sprintf("%+v", s)
		}
	}
	return "not hosted"
}

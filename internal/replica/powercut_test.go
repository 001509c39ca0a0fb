package replica

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

var (
	powerCutRounds = flag.Int("replica.powercuts", 12, "rounds of TestReplicasSurvivePowerCuts")
	powerCutSeed   = flag.Uint64("replica.powercuts.seed", 0, "seed of TestReplicasSurvivePowerCuts (0: from the clock)")
)

// Power cuts at random moments of random replicas, under a network that
// drops, duplicates, delays and reorders, and at the moment a deposed
// leader applies the entries that replace its own: each cut replica
// restarts from exactly what its disk had synced, which Raft must accept,
// holding at least every entry it had applied; no log index is ever
// applied with two different entries by any replica, before or after a
// restart; and the replicas agree in the end.
func TestReplicasSurvivePowerCuts(t *testing.T) {
	seed := *powerCutSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -replica.powercuts.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	nw := NewLocalNetwork(seed)
	defer nw.Close()
	nw.SetFaults(Faults{Drop: 0.05, Duplicate: 0.05, Reorder: 0.1, MaxDelay: 2 * time.Millisecond})
	shs := shards[:2]
	p := newPowerCuts(t, nw, shs)
	c := &cluster{t: t}
	for _, id := range p.peers {
		c.rs = append(c.rs, p.start(id, store.NewMemFS()))
	}
	defer func() { c.stop() }()

	rounds := *powerCutRounds
	for round := range rounds {
		i := rng.IntN(len(c.rs))
		victim := c.rs[i]
		prefix := fmt.Sprintf("r%d", round)
		switch rng.IntN(5) {
		case 0: // a cut while entries come
			p.arm(victim.id, 1+rng.IntN(40))
			c.commit(prefix, 30)
			if at, ok := p.disarm(victim.id); ok {
				c.rs[i] = p.restart(victim.id, victim, at)
			}
		case 1: // a cut, then down while the others truncate their logs
			p.cutNow(victim.id)
			at, _ := p.disarm(victim.id)
			victim.stop(t)
			c.commit(prefix, 200, victim)
			up := p.restart(victim.id, nil, at)
			c.rs[i] = up
			p.arm(up.id, 1+rng.IntN(3)) // maybe right after its snapshot
			c.commit(prefix+"b", 10)
			if at, ok := p.disarm(up.id); ok {
				c.rs[i] = p.restart(up.id, up, at)
			}
		case 2: // cut off from the others a while
			nw.Isolate(victim.id, true)
			c.commit(prefix, 30, victim)
			nw.Isolate(victim.id, false)
		case 3: // every replica cut at once, while a leader commits
			l := c.leader(shs[0])
			p.armAll(l.id, 1+rng.IntN(5))
			want := batch{prefix, 100}.entries(shs[0])
			for _, d := range want {
				_ = l.node.Propose(shs[0], []byte(d)) // dropped if it no longer leads
			}
			testwait.For(t, waitLimit, "the cut, the entries applied or a new leader", func() bool {
				l.rec.mu.Lock()
				leads := l.rec.lead[shs[0]] > 0
				l.rec.mu.Unlock()
				return p.wasCut(l.id) || !leads || isSubset(want, l.rec.entries(shs[0]))
			})
			p.cutAll()
			// All are down before any boots: a cut replica must not run
			// beside its restarted peers.
			ats := make([]cutAt, len(c.rs))
			for j, r := range c.rs {
				ats[j], _ = p.disarm(r.id)
				r.stop(t)
			}
			for j, r := range c.rs {
				c.rs[j] = p.restart(r.id, nil, ats[j])
			}
		case 4: // a leader cut off with entries only it holds; back, it is
			// given its successor's in their place, committed at once, and
			// its power is cut in the turn that applies them
			l := c.leader(shs[0])
			i = slices.Index(c.rs, l)
			nw.Isolate(l.id, true)
			for _, d := range (batch{prefix + "x", 5}).entries(shs[0]) {
				_ = l.node.Propose(shs[0], []byte(d)) // never committed
			}
			c.commit(prefix, 30, l)
			p.arm(l.id, 1)
			nw.Isolate(l.id, false)
			c.commit(prefix+"b", 10)
			if at, ok := p.disarm(l.id); ok {
				c.rs[i] = p.restart(l.id, l, at)
			}
		}
		p.check()
	}
	nw.SetFaults(Faults{})
	c.commit("last", 10)
	c.converge()
	p.check()
	t.Logf("%d power cuts in %d rounds", p.cuts, rounds)
}

// powerCuts runs the replicas of a test cluster of three on a
// LocalNetwork, watches them apply entries, and cuts the power of one, or
// of all, when armed.
type powerCuts struct {
	t      *testing.T
	nw     *LocalNetwork
	peers  []uint64
	shards []uint16

	mu    sync.Mutex
	seen  map[uint16]map[uint64]appliedEntry // by shard and index, the entry first applied there
	fs    map[uint64]*store.MemFS            // each replica's disk
	armed map[uint64]int                     // turns with entries or a snapshot left before a replica's cut
	all   bool                               // the armed cut is every replica's
	recs  map[uint64]*recorder
	cut   map[uint64]cutAt
	cuts  int
	bad   []string
}

func newPowerCuts(t *testing.T, nw *LocalNetwork, shards []uint16) *powerCuts {
	return &powerCuts{
		t: t, nw: nw, peers: []uint64{1, 2, 3}, shards: shards,
		seen: map[uint16]map[uint64]appliedEntry{}, fs: map[uint64]*store.MemFS{}, armed: map[uint64]int{},
		recs: map[uint64]*recorder{}, cut: map[uint64]cutAt{},
	}
}

// start runs replica id on fs, watched. Disks have different speeds, so
// that a cut finds writes not yet synced, more of them on some replicas
// than on others.
func (p *powerCuts) start(id uint64, fs *store.MemFS) *replica {
	fs.SyncDelay(time.Duration(id*id) * 100 * time.Microsecond)
	p.mu.Lock()
	p.fs[id] = fs
	p.mu.Unlock()
	return startReplica(p.t, id, p.peers, p.shards, fs, &localNet{LocalNetwork: p.nw}, p.watch)
}

// describe names an entry by its term and data.
func describe(e *raftpb.Entry) string { return fmt.Sprintf("term %d %q", e.GetTerm(), e.GetData()) }

// appliedEntry is an entry applied at some index, and the replica that
// applied it first.
type appliedEntry struct {
	entry string
	by    uint64
}

// cutAt is what a cut replica's disk kept and how far it had applied
// each shard.
type cutAt struct {
	fs      *store.MemFS
	applied map[uint16]uint64
}

// watch is a Config option: the node's state machine reports to p.
func (p *powerCuts) watch(cfg *Config) {
	rec := cfg.StateMachine.(*recorder)
	p.mu.Lock()
	p.recs[cfg.ID] = rec
	p.mu.Unlock()
	cfg.StateMachine = &watched{recorder: rec, p: p, id: cfg.ID}
}

type watched struct {
	*recorder
	p  *powerCuts
	id uint64
}

func (w *watched) Apply(committed []Committed) {
	w.recorder.Apply(committed)
	w.p.applied(w.id, committed)
	w.p.turn(w.id)
}

func (w *watched) Restore(shard uint16, write func() error) {
	w.recorder.Restore(shard, write)
	w.p.turn(w.id)
}

// applied records what a replica applied, and any index applied with
// another entry before.
func (p *powerCuts) applied(id uint64, committed []Committed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range committed {
		seen := p.seen[c.Shard]
		if seen == nil {
			seen = map[uint64]appliedEntry{}
			p.seen[c.Shard] = seen
		}
		for _, e := range c.Entries {
			got := describe(e)
			switch was, ok := seen[e.GetIndex()]; {
			case !ok:
				seen[e.GetIndex()] = appliedEntry{entry: got, by: id}
			case was.entry != got:
				p.bad = append(p.bad, fmt.Sprintf("replica %d applied %s at %d of shard %d, where replica %d applied %s",
					id, got, e.GetIndex(), c.Shard, was.by, was.entry))
			}
		}
	}
}

// turn counts down to an armed replica's cut, and cuts when it is due.
// The count and the cut are one step under p.mu, so that a cut is never
// made after the test disarmed it (a cut recorded then would linger, and
// a later round would restart the replica from that old disk).
func (p *powerCuts) turn(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	left, ok := p.armed[id]
	switch {
	case !ok:
	case left > 1:
		p.armed[id] = left - 1
	case p.all:
		p.cutAllLocked()
	default:
		p.cutLocked(id)
	}
}

// armAll arms a cut of every replica after turns of replica id.
func (p *powerCuts) armAll(id uint64, turns int) {
	p.mu.Lock()
	p.armed[id], p.all = turns, true
	p.mu.Unlock()
}

// cutAll cuts every replica not cut yet.
func (p *powerCuts) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAllLocked()
}

// cutAllLocked cuts every replica not cut yet: first all off the network,
// then their disks. p.mu is held.
func (p *powerCuts) cutAllLocked() {
	p.all = false
	var ids []uint64
	for id := range p.fs {
		if _, done := p.cut[id]; !done {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		p.nw.Isolate(id, true)
	}
	for _, id := range ids {
		p.cutLocked(id)
	}
}

func (p *powerCuts) wasCut(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.cut[id]
	return ok
}

func (p *powerCuts) arm(id uint64, turns int) {
	p.mu.Lock()
	p.armed[id] = turns
	p.mu.Unlock()
}

// cutNow cuts a replica's power.
func (p *powerCuts) cutNow(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLocked(id)
}

// cutLocked cuts a replica's power, unless it is cut already: nothing it
// sends from now on arrives, and its disk keeps what it synced. p.mu is
// held.
func (p *powerCuts) cutLocked(id uint64) {
	delete(p.armed, id)
	if _, done := p.cut[id]; done {
		return
	}
	p.nw.Isolate(id, true)
	rec := p.recs[id]
	rec.mu.Lock()
	p.cut[id] = cutAt{fs: p.fs[id].Crash(), applied: maps.Clone(rec.index)}
	p.t.Logf("cut replica %d, applied %v", id, rec.index)
	rec.mu.Unlock()
	p.cuts++
}

// disarm returns where a replica was cut, if it was.
func (p *powerCuts) disarm(id uint64) (cutAt, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.armed, id)
	at, ok := p.cut[id]
	delete(p.cut, id)
	return at, ok
}

// restart stops cut replica id, r if still running, and starts it again
// on what its disk kept, which must hold every entry it had applied: in
// its state or in its log, as they were applied.
func (p *powerCuts) restart(id uint64, r *replica, at cutAt) *replica {
	p.t.Helper()
	if r != nil {
		r.stop(p.t)
	}
	p.nw.Isolate(id, false)
	p.t.Logf("restarting replica %d", id)
	up := p.start(id, at.fs) // Raft refuses here a log its hard state contradicts
	for sh, applied := range at.applied {
		kept, err := up.rec.AppliedIndex(sh)
		if err != nil {
			p.t.Fatal(err)
		}
		l, err := up.st.RaftLog(sh)
		if err != nil {
			p.t.Fatal(err)
		}
		p.logAsApplied(id, sh, l.Entries, max(kept, applied))
		if len(l.Entries) > 0 {
			kept = max(kept, l.Entries[len(l.Entries)-1].GetIndex())
		}
		if kept < applied {
			p.t.Fatalf("replica %d had applied shard %d to %d, but after a power cut holds it only to %d", id, sh, applied, kept)
		}
	}
	return up
}

// logAsApplied notes every entry of a restarted replica's log, up to an
// index it had applied, that differs from the entry applied there.
func (p *powerCuts) logAsApplied(id uint64, sh uint16, log []*raftpb.Entry, upTo uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range log {
		if e.GetIndex() > upTo {
			break
		}
		got := describe(e)
		if was, ok := p.seen[sh][e.GetIndex()]; ok && was.entry != got {
			p.bad = append(p.bad, fmt.Sprintf("replica %d restarted with %s at %d of shard %d, where replica %d applied %s",
				id, got, e.GetIndex(), sh, was.by, was.entry))
		}
	}
}

func (p *powerCuts) check() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bad {
		p.t.Error(b)
	}
	if len(p.bad) > 0 {
		p.t.FailNow()
	}
}

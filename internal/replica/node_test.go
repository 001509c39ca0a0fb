package replica

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

var shards = []uint16{0, 1, 2, 3, 4, 5, 6, 7}

// A standalone node leads every shard and commits what it proposes, in
// order; its log is truncated as the state catches up, and a restart
// replays only what the state does not hold.
func TestStandaloneNodeCommitsEveryShard(t *testing.T) {
	fs := store.NewMemFS()
	r := startReplica(t, 1, nil, shards, fs, nil)
	r.rec.await(t, "leadership of every shard", func() bool { return len(r.rec.lead) == len(shards) })
	want := proposeAll(t, r, 100, "a")
	for _, sh := range shards {
		r.rec.await(t, "every entry applied", func() bool { return len(r.rec.applied[sh]) == len(want[sh]) })
		if got := r.rec.entries(sh); !slices.Equal(got, want[sh]) {
			t.Fatalf("shard %d applied %v, want %v", sh, got, want[sh])
		}
	}
	r.stop(t)

	r = startReplica(t, 1, nil, shards, fs, nil)
	defer r.stop(t)
	more := proposeAll(t, r, 10, "b")
	for _, sh := range shards {
		r.rec.await(t, "the new entries applied", func() bool { return len(r.rec.applied[sh]) >= len(more[sh]) })
		if got := r.rec.entries(sh); !slices.Equal(got, more[sh]) {
			t.Fatalf("after a restart shard %d applied %v, want only %v: the state held the rest", sh, got, more[sh])
		}
		l, err := r.st.RaftLog(sh)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Entries) > 64 {
			t.Fatalf("shard %d keeps %d log entries: the log is not truncated", sh, len(l.Entries))
		}
	}
}

// A turn writes a group's hard state only when its term or vote changed,
// not for every new commit index: the stored commit lags, and a restart
// takes the applied index as committed and goes on from there.
func TestCommitIndexIsNotWrittenEveryTurn(t *testing.T) {
	fs := store.NewMemFS()
	r := startReplica(t, 1, nil, shards, fs, nil)
	r.rec.await(t, "leadership of every shard", func() bool { return len(r.rec.lead) == len(shards) })
	want := proposeAll(t, r, 50, "a")
	sh := shards[0]
	r.rec.await(t, "every entry applied", func() bool { return len(r.rec.applied[sh]) == len(want[sh]) })
	r.rec.mu.Lock()
	applied := r.rec.index[sh]
	r.rec.mu.Unlock()
	r.stop(t)

	st, err := store.Open("/data", store.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.RaftLog(sh)
	if err == nil {
		err = st.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := l.HardState.GetCommit(); got >= applied {
		t.Fatalf("the stored hard state commits %d, the applied index %d: it was written for every commit", got, applied)
	}

	r = startReplica(t, 1, nil, shards, fs, nil)
	defer r.stop(t)
	more := proposeAll(t, r, 5, "b")
	r.rec.await(t, "the new entries applied", func() bool { return len(r.rec.applied[sh]) >= len(more[sh]) })
	if got := r.rec.entries(sh); !slices.Equal(got, more[sh]) {
		t.Fatalf("after a restart shard %d applied %v, want only %v", sh, got, more[sh])
	}
}

// After a power loss every entry that was applied is in the state or in
// the log: nothing committed is lost.
func TestStandaloneNodeSurvivesPowerLoss(t *testing.T) {
	fs := store.NewMemFS()
	r := startReplica(t, 1, nil, shards, fs, nil)
	r.rec.await(t, "leadership", func() bool { return len(r.rec.lead) == len(shards) })
	proposeAll(t, r, 200, "p")
	sh := shards[3]
	r.rec.await(t, "some entries applied", func() bool { return len(r.rec.applied[sh]) > 100 })
	r.rec.mu.Lock()
	applied := r.rec.index[sh]
	after := fs.Crash()
	r.rec.mu.Unlock()
	r.stop(t)

	r = startReplica(t, 1, nil, shards, after, nil)
	defer r.stop(t)
	meta, err := r.st.ShardMeta(sh)
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.st.RaftLog(sh)
	if err != nil {
		t.Fatal(err)
	}
	kept := meta.GetApplied()
	if len(l.Entries) > 0 {
		kept = max(kept, l.Entries[len(l.Entries)-1].GetIndex())
	}
	if kept < applied {
		t.Fatalf("entries up to %d were applied, but after a power loss state and log hold only up to %d", applied, kept)
	}
}

// Three replicas agree on every shard's log; when a leader is cut off,
// another takes over and the log goes on; the old one catches up.
func TestThreeReplicasFailOver(t *testing.T) {
	for _, tn := range networks {
		t.Run(tn.name, func(t *testing.T) {
			nw := tn.new(t)
			defer nw.close()
			c := startCluster(t, nw, shards)
			defer c.stop()
			c.commit("before", 20)
			old := c.leader(0)
			nw.isolate(old.id, true)
			c.awaitLeader(0, func(r *replica) bool { return r != old })
			c.commit("during", 20, old)
			nw.isolate(old.id, false)
			c.converge()
		})
	}
}

// A replica that stops, misses entries and starts again where it was is
// reached again by the others and catches up.
func TestReplicaRestartsAndCatchesUp(t *testing.T) {
	for _, tn := range networks {
		t.Run(tn.name, func(t *testing.T) {
			nw := tn.new(t)
			defer nw.close()
			c := startCluster(t, nw, shards)
			defer c.stop()
			c.commit("before", 10)
			down := c.rs[2]
			down.stop(t)
			c.commit("during", 20, down)
			c.rs[2] = startReplica(t, down.id, down.node.cfg.Peers, shards, down.fs, nw)
			c.commit("after", 10)
			c.caughtUp(c.rs[2], batch{"during", 20}, batch{"after", 10})
		})
	}
}

// Dropped, duplicated, delayed and reordered messages change nothing of
// what is committed: every replica applies the same log.
func TestReplicasAgreeUnderFaults(t *testing.T) {
	nw := NewLocalNetwork(uint64(time.Now().UnixNano()))
	defer nw.Close()
	nw.SetFaults(Faults{Drop: 0.1, Duplicate: 0.1, Reorder: 0.1, MaxDelay: 3 * time.Millisecond})
	c := startCluster(t, &localNet{LocalNetwork: nw}, shards[:4])
	defer c.stop()
	c.commit("f", 30)
	nw.SetFaults(Faults{})
	c.converge()
}

// proposeAll proposes n numbered entries on every shard of r.
func proposeAll(t *testing.T, r *replica, n int, prefix string) map[uint16][]string {
	t.Helper()
	want := map[uint16][]string{}
	for i := range n {
		for _, sh := range shards {
			data := fmt.Sprintf("%s-%d-%03d", prefix, sh, i)
			if err := r.node.Propose(sh, []byte(data)); err != nil {
				t.Fatal(err)
			}
			want[sh] = append(want[sh], data)
		}
	}
	return want
}

// A replica that was down while the others' logs moved on and were
// truncated catches up from a snapshot of the shard's state, then
// follows the log again.
func TestLaggingReplicaCatchesUpFromASnapshot(t *testing.T) {
	for _, tn := range networks {
		t.Run(tn.name, func(t *testing.T) {
			nw := tn.new(t)
			defer nw.close()
			c := startCluster(t, nw, shards[:2])
			defer c.stop()
			c.commit("before", 10)
			down := c.rs[2]
			down.stop(t)
			c.commit("while-down", 300, down) // far past what the leaders keep for it
			up := startReplica(t, down.id, down.node.cfg.Peers, shards[:2], down.fs, nw)
			c.rs[2] = up
			for _, sh := range shards[:2] {
				up.rec.await(t, "a snapshot", func() bool { return up.rec.restored[sh] > 0 })
			}
			c.commit("after", 10)
			c.caughtUp(up, batch{"after", 10})
		})
	}
}

// merge joins the proposals to one shard that wait for a turn, in order,
// when the state machine allows it; never the system group's, never past
// maxMerged, and never by writing into a proposer's buffer.
func TestMergeJoinsProposalsToAShard(t *testing.T) {
	buf := make([]byte, 1, 64)
	buf[0] = 'a'
	big := make([]byte, maxMerged)
	props := []proposal{
		{shard: 1, data: buf}, {shard: 2, data: []byte("b")}, {shard: 1, data: []byte("c")},
		{shard: store.SystemShard, data: []byte("x")}, {shard: store.SystemShard, data: []byte("y")},
		{shard: 1, data: []byte("d")}, {shard: 2, data: big}, {shard: 2, data: []byte("e")},
	}
	n := &Node{cfg: Config{Mergeable: true}}
	got := n.merge(slices.Clone(props))
	want := []proposal{
		{shard: 1, data: []byte("acd")}, {shard: 2, data: []byte("b")},
		{shard: store.SystemShard, data: []byte("x")}, {shard: store.SystemShard, data: []byte("y")},
		{shard: 2, data: big}, {shard: 2, data: []byte("e")},
	}
	if !slices.EqualFunc(got, want, func(a, b proposal) bool { return a.shard == b.shard && bytes.Equal(a.data, b.data) }) {
		t.Fatalf("merged %d proposals: %q, want %q", len(props), shardData(got), shardData(want))
	}
	if string(buf[:cap(buf)][:2]) != "a\x00" {
		t.Fatalf("merge wrote into a proposer's buffer: %q", buf[:2:2])
	}
	n.cfg.Mergeable = false
	if got := n.merge(slices.Clone(props)); len(got) != len(props) {
		t.Fatalf("without Mergeable, %d proposals became %d", len(props), len(got))
	}
}

func shardData(ps []proposal) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d:%.8s", p.shard, p.data))
	}
	return out
}

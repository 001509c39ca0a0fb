package replica

import (
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
	nw := NewLocalNetwork(1)
	defer nw.Close()
	peers := []uint64{1, 2, 3}
	var rs []*replica
	for _, id := range peers {
		rs = append(rs, startReplica(t, id, peers, shards, store.NewMemFS(), nw))
	}
	defer func() {
		for _, r := range rs {
			r.stop(t)
		}
	}()
	c := &cluster{t: t, rs: rs}
	c.commit("before", 20)
	old := c.leader(0)
	nw.Isolate(old.id, true)
	c.awaitLeader(0, func(r *replica) bool { return r != old })
	c.commit("during", 20, old)
	nw.Isolate(old.id, false)
	c.converge()
}

// Dropped, duplicated, delayed and reordered messages change nothing of
// what is committed: every replica applies the same log.
func TestReplicasAgreeUnderFaults(t *testing.T) {
	nw := NewLocalNetwork(uint64(time.Now().UnixNano()))
	defer nw.Close()
	nw.SetFaults(Faults{Drop: 0.1, Duplicate: 0.1, Reorder: 0.1, MaxDelay: 3 * time.Millisecond})
	peers := []uint64{1, 2, 3}
	var rs []*replica
	for _, id := range peers {
		rs = append(rs, startReplica(t, id, peers, shards[:4], store.NewMemFS(), nw))
	}
	defer func() {
		for _, r := range rs {
			r.stop(t)
		}
	}()
	c := &cluster{t: t, rs: rs}
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

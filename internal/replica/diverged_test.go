package replica

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/boomerangd/boomerang/internal/testwait"
)

// A leader cut off from its followers goes on writing entries that are
// never committed; the others elect a leader, commit and truncate far
// past them; back on the network, the old leader mostly gets a snapshot
// whose index falls among its stale entries (when its leader finds an
// earlier match it gets appends, which delete them as well). Raft drops the whole log when it
// restores a snapshot, and so must the store: a stale entry beyond the
// snapshot would outlive it with its older term, and a later append
// would write its key a second time.
func TestSnapshotDropsADivergedLog(t *testing.T) {
	nw := networks[0].new(t)
	defer nw.close()
	sh := shards[0]
	c := startCluster(t, nw, []uint16{sh})
	defer c.stop()
	c.commit("before", 10)
	old := c.leader(sh)
	nw.isolate(old.id, true)
	const stale = 600 // more than the others commit while it is away
	for i := range stale {
		_ = old.node.Propose(sh, fmt.Appendf(nil, "stale-%d", i))
	}
	testwait.For(t, waitLimit, "the stale entries written", func() bool { return staleEntries(t, old, sh) == stale })
	c.commit("while-away", 300, old) // far past what a leader keeps for it
	nw.isolate(old.id, false)
	c.commit("after", 5)
	c.caughtUp(old, batch{"after", 5})
	if n := staleEntries(t, old, sh); n != 0 {
		l, _ := old.st.RaftLog(sh)
		t.Fatalf("%d stale entries outlived the snapshot at %d (log holds %d to %d)",
			n, l.Truncated.GetIndex(), l.Entries[0].GetIndex(), l.Entries[len(l.Entries)-1].GetIndex())
	}
}

// staleEntries counts the entries of r's stored log of shard that no
// leader committed.
func staleEntries(t *testing.T, r *replica, shard uint16) int {
	t.Helper()
	l, err := r.st.RaftLog(shard)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range l.Entries {
		if bytes.HasPrefix(e.GetData(), []byte("stale-")) {
			n++
		}
	}
	return n
}

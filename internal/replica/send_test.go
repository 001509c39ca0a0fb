package replica

import (
	"bytes"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/boomerangd/boomerang/internal/testwait"
)

// A leader sends its appends before its own write of them is durable, so
// that its followers write them meanwhile: with the leader's disk syncs
// held, both followers still hold the entry it proposed in their logs.
// Once the syncs are released, the entry commits.
func TestLeaderSendsBeforeItsSync(t *testing.T) {
	_, c := oneShard(t)
	const sh = 0
	l := c.leader(sh)
	l.fs.HoldSyncs(true)
	t.Cleanup(func() { l.fs.HoldSyncs(false) }) // before the cluster stops
	if err := l.node.Propose(sh, []byte("held")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitLimit, "both followers writing the entry while the leader's sync waits", func() bool {
		for _, r := range c.rs {
			if r != l && !logHolds(t, r, sh, []byte("held")) {
				return false
			}
		}
		return true
	})
	l.fs.HoldSyncs(false)
	l.rec.await(t, "the entry applied", func() bool { return slices.Contains(l.rec.applied[sh], "held") })
}

// logHolds reports whether r's stored log of shard holds an entry with
// data.
func logHolds(t *testing.T, r *replica, shard uint16, data []byte) bool {
	t.Helper()
	log, err := r.st.RaftLog(shard)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(log.Entries, func(e *raftpb.Entry) bool { return bytes.Equal(e.GetData(), data) })
}

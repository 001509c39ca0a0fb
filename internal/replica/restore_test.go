package replica

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A follower can get a snapshot and the entries after it in one turn (a
// leader's snapshot, then its appends, both waiting when the loop wakes),
// with a commit index past the snapshot. The snapshot is written in a
// synced batch of its own before the turn's entries: a power loss
// between the two must leave a log Raft can start from, whose hard state
// commits nothing past its last entry.
func TestPowerLossBetweenSnapshotAndItsEntries(t *testing.T) {
	const sh, snapAt, last, term = 3, 50, 60, 2
	nw := NewLocalNetwork(1) // the test plays the leader, 1; nothing reaches 3
	defer nw.Close()
	p := newPowerCuts(t, nw, []uint16{sh})
	r := p.start(2, store.NewMemFS())
	p.arm(r.id, 1) // its first turn with something to apply: the snapshot

	snap := &raftpb.Snapshot{
		Data: shardSnapshot(t, sh, snapAt),
		Metadata: &raftpb.SnapshotMetadata{
			Index: proto.Uint64(snapAt), Term: proto.Uint64(term),
			ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}},
		},
	}
	msnap := &raftpb.Message{
		Type: raftpb.MessageType_MsgSnap.Enum(), From: proto.Uint64(1), To: proto.Uint64(2), Term: proto.Uint64(term),
		Snapshot: snap,
	}
	mapp := appendTo2(sh, 1, term, snapAt, term, last, entryRun(snapAt+1, last, term, "after"))
	r.node.Receive([]Envelope{{Shard: sh, Msg: msnap}, mapp})

	r.rec.await(t, "the entries after the snapshot applied", func() bool { return r.rec.index[sh] == last })
	at, ok := p.disarm(r.id)
	if !ok {
		t.Fatal("no snapshot was restored")
	}

	l := logAt(t, at, sh)
	end := l.Truncated.GetIndex()
	if len(l.Entries) > 0 {
		end = l.Entries[len(l.Entries)-1].GetIndex()
	}
	if l.Truncated.GetIndex() != snapAt || l.HardState.GetCommit() > end {
		t.Fatalf("after the power loss: log starts after %d, ends at %d, hard state commits %d", l.Truncated.GetIndex(), end, l.HardState.GetCommit())
	}
	p.restart(r.id, r, at).stop(t)
}

// appendTo2 is leader's append of entries to replica 2, in term, after
// the entry at prev of prevTerm, committing up to commit.
func appendTo2(shard uint16, leader, term, prev, prevTerm, commit uint64, entries []*raftpb.Entry) Envelope {
	return Envelope{Shard: shard, Msg: &raftpb.Message{
		Type: raftpb.MessageType_MsgApp.Enum(), From: proto.Uint64(leader), To: proto.Uint64(2), Term: proto.Uint64(term),
		Index: proto.Uint64(prev), LogTerm: proto.Uint64(prevTerm), Commit: proto.Uint64(commit), Entries: entries,
	}}
}

// entryRun returns log entries from index first to last of term, each
// holding data.
func entryRun(first, last, term uint64, data string) []*raftpb.Entry {
	var es []*raftpb.Entry
	for i := first; i <= last; i++ {
		es = append(es, &raftpb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: []byte(data)})
	}
	return es
}

// logAt reads a shard's replication log from the disk a cut left.
func logAt(t *testing.T, at cutAt, shard uint16) store.RaftLog {
	t.Helper()
	st, err := store.Open("/data", store.Options{FS: at.fs})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.RaftLog(shard)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return l
}

// shardSnapshot encodes an empty state of shard that holds its log up to
// applied.
func shardSnapshot(t *testing.T, shard uint16, applied uint64) []byte {
	t.Helper()
	st, err := store.Open("/data", store.Options{FS: store.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := st.NewBatch()
	if err := b.PutShardMeta(shard, &storepb.ShardMeta{Applied: applied}); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
	ss, err := st.SnapshotShard(shard)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	data, err := ss.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

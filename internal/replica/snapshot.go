package replica

import (
	"fmt"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// Snapshots. A follower that needs entries the leader's log no longer
// holds gets the shard's state instead: the store's copy of it
// (store.ShardSnapshot), which includes the log up to its applied index.
// Raft asks the log storage for a snapshot on the loop; reading and
// encoding a shard can take a while, so the storage answers "not yet"
// and prepares it on another goroutine, and raft asks again on the
// follower's next heartbeat. A follower restores a snapshot in one synced
// batch with its log's new start, so a crash leaves it either before or
// after, never between.

// logStorage is a group's raft.Storage: its log in memory, and snapshots
// of its state prepared on demand.
type logStorage struct {
	*raft.MemoryStorage
	n     *Node
	shard uint16

	mu        sync.Mutex
	prepared  *raftpb.Snapshot // ready to send; nil: none
	preparing bool
	confs     []confAt // the group's configurations, oldest first
}

// confAt is a configuration and the log index it took effect at.
type confAt struct {
	index uint64
	conf  *raftpb.ConfState
}

func newLogStorage(n *Node, shard uint16) *logStorage {
	return &logStorage{MemoryStorage: raft.NewMemoryStorage(), n: n, shard: shard}
}

// Snapshot implements raft.Storage: a prepared snapshot if one that the
// log still follows is ready, else ErrSnapshotTemporarilyUnavailable while
// one is prepared.
func (ls *logStorage) Snapshot() (*raftpb.Snapshot, error) {
	first, err := ls.FirstIndex()
	if err != nil {
		return nil, err
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	// A snapshot from before the latest configuration change would not
	// hold a replica that change added, which then refuses it.
	if p := ls.prepared; p != nil && p.GetMetadata().GetIndex() >= first-1 && p.GetMetadata().GetIndex() >= ls.confs[len(ls.confs)-1].index {
		return p, nil
	}
	ls.prepared = nil
	if !ls.preparing {
		ls.preparing = true
		ls.n.work.Go(ls.prepare)
	}
	return nil, raft.ErrSnapshotTemporarilyUnavailable
}

// prepare encodes the shard's state as it is now, with the term and
// configuration at the log index it includes.
func (ls *logStorage) prepare() {
	snap, err := ls.snapshot()
	ls.mu.Lock()
	ls.prepared, ls.preparing = snap, false
	ls.mu.Unlock()
	if err != nil {
		ls.n.cfg.Logger.Warn("preparing a snapshot failed", "shard", ls.shard, "err", err)
	}
}

func (ls *logStorage) snapshot() (*raftpb.Snapshot, error) {
	ss, err := ls.n.cfg.Store.SnapshotShard(ls.shard)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	index := ss.Meta.GetApplied()
	term, err := ls.Term(index)
	if err != nil {
		return nil, fmt.Errorf("term of applied index %d: %w", index, err)
	}
	data, err := ss.Encode()
	if err != nil {
		return nil, err
	}
	meta := &raftpb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(term), ConfState: ls.confAt(index)}
	return &raftpb.Snapshot{Metadata: meta, Data: data}, nil
}

// setConf records the configuration from index on.
func (ls *logStorage) setConf(index uint64, conf *raftpb.ConfState) {
	ls.mu.Lock()
	ls.confs = append(ls.confs, confAt{index: index, conf: conf})
	ls.mu.Unlock()
}

// confAt returns the configuration in effect at index.
func (ls *logStorage) confAt(index uint64) *raftpb.ConfState {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	conf := ls.confs[0].conf
	for _, c := range ls.confs {
		if c.index <= index {
			conf = c.conf
		}
	}
	return conf
}

// restore makes a snapshot that arrived the shard's state and the start of
// its log: the state machine writes it once everything given to it before
// is applied, in a synced batch with the log's new start and the hard
// state (see restoredHardState). Entries of the same Ready follow in the
// turn's batch.
func (n *Node) restore(g *group, snap *raftpb.Snapshot, hs *raftpb.HardState) error {
	meta := snap.GetMetadata()
	written := make(chan error, 1)
	n.cfg.StateMachine.Restore(g.shard, func() error {
		b := n.cfg.Store.NewBatch()
		_, err := b.RestoreShard(g.shard, snap.Data)
		if err == nil {
			err = b.TruncateRaftLog(g.shard, meta)
		}
		if err == nil && !raft.IsEmptyHardState(hs) {
			err = b.SetRaftHardState(g.shard, restoredHardState(hs, meta.GetIndex()))
		}
		if err == nil {
			err = n.cfg.Store.Commit(b)
		}
		written <- err
		return err
	})
	select {
	case err := <-written:
		if err != nil {
			return fmt.Errorf("replica: shard %d: restore snapshot at %d: %w", g.shard, meta.GetIndex(), err)
		}
	case <-n.stop:
		return ErrStopped
	}
	if err := g.storage.ApplySnapshot(snap); err != nil {
		return err
	}
	g.storage.setConf(meta.GetIndex(), meta.GetConfState())
	g.conf = meta.GetConfState()
	g.persisted, g.truncated, g.durable = meta.GetIndex(), meta.GetIndex(), meta.GetIndex()
	n.cfg.Logger.Info("restored a snapshot", "shard", g.shard, "index", meta.GetIndex(), "bytes", len(snap.Data))
	return nil
}

// restoredHardState is the hard state written with a snapshot at index.
// The Ready that brings a snapshot can bring the entries after it too
// (its leader's appends, stepped in the same turn), and a commit index
// among them; those entries go in the turn's batch, after this one, and a
// power loss between the two would leave a hard state committing past
// the log, which Raft refuses to start from. So the commit written here
// stops at the snapshot: the commit index is Raft's volatile state (see
// persist), learnt again from the leader.
func restoredHardState(hs *raftpb.HardState, index uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: hs.Term, Vote: hs.Vote, Commit: proto.Uint64(min(hs.GetCommit(), index))}
}

// snapshotTicks is how long a follower may take to apply a snapshot sent
// to it before the leader sends another: the transport may have lost it.
const snapshotTicks = 50

// watchSnapshots reports a snapshot a follower has not applied in time as
// failed, so that the leader sends it again rather than wait forever.
func (n *Node) watchSnapshots(g *group) {
	if !g.leader {
		return
	}
	var lost []uint64
	g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if pr.State != tracker.StateSnapshot {
			delete(g.snapSent, id)
			return
		}
		g.snapSent[id]++
		if g.snapSent[id] > snapshotTicks {
			delete(g.snapSent, id)
			lost = append(lost, id)
		}
	})
	for _, id := range lost {
		g.rn.ReportSnapshot(id, raft.SnapshotFailure)
	}
}

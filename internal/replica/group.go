package replica

import (
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
)

// group is one shard's Raft group on this node.
type group struct {
	shard   uint16
	self    uint64 // this node
	rn      *raft.RawNode
	storage *logStorage

	persisted uint64            // last log index persisted
	truncated uint64            // the log starts after this index
	conf      *raftpb.ConfState // the configuration, kept for truncations
	durable   uint64            // applied index whose state is durable
	// savedTerm and savedVote are the hard state's last written term and
	// vote: a hard state that changes only its commit index is not
	// written (see persist).
	savedTerm, savedVote uint64

	leader      bool           // this node leads the group
	term        uint64         // the term it leads in
	leaderSince time.Time      // when it became leader
	reported    bool           // Lead was called for term
	lease       atomic.Int64   // until when it holds the lease: ns since the node's epoch
	snapSent    map[uint64]int // followers sent a snapshot: ticks since
	leaseFloor  time.Time      // confirmations asked before it extend no lease
	held        [][]byte       // proposals raft dropped while it led: see proposeHeld
	deafTicks   int            // ticks left before it hears vote requests: see deaf

	// added is the index of the configuration change that added this copy
	// of the replica to the group, as far as it knows (see Envelope);
	// peerAdded holds, for each replica, that of the last change applied
	// here that added it.
	added     uint64
	peerAdded map[uint64]uint64
}

// initialIndex is where a new group's log starts: an initial snapshot
// holding the configuration, so that every node starts alike.
const initialIndex, initialTerm = 1, 1

// load restores a group from the store, or creates it, writing its
// initial state into b: with voters, the group's first configuration (all
// its first replicas start alike), or, with none, empty, as a replica that
// joins an existing group and waits for its leader's snapshot.
func (n *Node) load(shard uint16, voters []uint64, b *store.Batch) (*group, error) {
	l, err := n.cfg.Store.RaftLog(shard)
	if err != nil {
		return nil, err
	}
	g := &group{shard: shard, self: n.cfg.ID, storage: newLogStorage(n, shard), snapSent: make(map[uint64]int), peerAdded: make(map[uint64]uint64),
		deafTicks: n.cfg.ElectionTicks}
	if l.Truncated.GetIndex() == 0 && len(voters) > 0 {
		l.Truncated = &raftpb.SnapshotMetadata{
			Index:     proto.Uint64(initialIndex),
			Term:      proto.Uint64(initialTerm),
			ConfState: &raftpb.ConfState{Voters: voters},
		}
		l.HardState = &raftpb.HardState{Term: proto.Uint64(initialTerm), Commit: proto.Uint64(initialIndex)}
		if err := firstErr(b.TruncateRaftLog(shard, l.Truncated), b.SetRaftHardState(shard, l.HardState)); err != nil {
			return nil, err
		}
	}
	if l.Truncated.GetIndex() > 0 {
		if err := g.storage.ApplySnapshot(&raftpb.Snapshot{Metadata: l.Truncated}); err != nil {
			return nil, err
		}
	}
	if err := firstErr(g.storage.SetHardState(l.HardState), g.storage.Append(l.Entries)); err != nil {
		return nil, err
	}
	g.truncated, g.conf = l.Truncated.GetIndex(), l.Truncated.GetConfState()
	g.storage.setConf(g.truncated, g.conf)
	g.persisted = g.truncated
	if len(l.Entries) > 0 {
		g.persisted = l.Entries[len(l.Entries)-1].GetIndex()
	}
	applied, err := n.cfg.StateMachine.AppliedIndex(shard)
	if err != nil {
		return nil, err
	}
	if applied < g.truncated {
		// The log was truncated past what the state holds: it cannot be
		// replayed. A fresh state starts at the initial snapshot, which
		// holds nothing.
		if g.truncated != initialIndex || applied != 0 {
			return nil, fmt.Errorf("%w: state applied to %d, but the log starts after %d", store.ErrCorrupt, applied, g.truncated)
		}
		applied = initialIndex
	}
	if applied > g.persisted {
		return nil, fmt.Errorf("%w: state applied to %d, but the log ends at %d", store.ErrCorrupt, applied, g.persisted)
	}
	if applied > l.HardState.GetCommit() {
		// Entries are applied once committed, and the state that says so
		// can be durable before the hard state that says they were:
		// committed they were, so say it now.
		l.HardState.Commit = proto.Uint64(applied)
		if err := firstErr(g.storage.SetHardState(l.HardState), b.SetRaftHardState(shard, l.HardState)); err != nil {
			return nil, err
		}
	}
	g.durable = applied
	g.savedTerm, g.savedVote = l.HardState.GetTerm(), l.HardState.GetVote()
	// The state holds the log up to applied already: a read barrier must
	// not wait for the state machine to apply a new entry to learn so.
	n.mu.Lock()
	n.applied[shard] = max(n.applied[shard], applied)
	n.mu.Unlock()
	g.rn, err = raft.NewRawNode(&raft.Config{
		ID:                        n.cfg.ID,
		ElectionTick:              n.cfg.ElectionTicks,
		HeartbeatTick:             n.cfg.HeartbeatTicks,
		Storage:                   g.storage,
		Applied:                   applied,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  8 << 20,
		MaxUncommittedEntriesSize: 256 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: !forwards(shard),
		Logger:                    raftLogger{n.cfg.Logger.With("shard", shard)},
	})
	if err != nil {
		return nil, err
	}
	return g, g.replayConfChanges(l.Entries, applied)
}

// replayConfChanges applies again the configuration changes among the
// log's entries up to applied. Raft restores the configuration of the
// log's start (its last truncation) and hands out only entries after
// applied, so without this a node restarted before its log was truncated
// past its last change would come back with an older configuration: one
// that may make it the only voter, or still a learner.
func (g *group) replayConfChanges(entries []*raftpb.Entry, applied uint64) error {
	for _, e := range entries {
		if e.GetIndex() <= g.truncated || e.GetIndex() > applied {
			continue
		}
		cc, err := decodeConfChange(e)
		if err != nil {
			return fmt.Errorf("%w: shard %d log entry %d: %v", store.ErrCorrupt, g.shard, e.GetIndex(), err)
		}
		if cc != nil {
			g.applyConf(cc, e.GetIndex())
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

package replica

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// Hosting. The groups a node hosts change at runtime: a cluster's
// placement adds a replica of a shard to a node (Host), changes a group's
// configuration through its leader (ChangeConf), hands leadership over
// (TransferLeadership), and removes a replica (Unhost). All of it runs on
// the loop; other goroutines see the groups through a published copy of
// the map.

var (
	// ErrNotLeader: the operation needs the shard's leader, and this node
	// is not (or stopped being) it.
	ErrNotLeader = errors.New("replica: not the shard's leader")
	// ErrStillMember: Unhost of a shard whose configuration still holds
	// this node.
	ErrStillMember = errors.New("replica: this node is still a member of the shard's group")
)

// group returns the hosted group of shard, or nil.
func (n *Node) group(shard uint16) *group {
	if m := n.hosted.Load(); m != nil {
		return (*m)[shard]
	}
	return nil
}

// publish makes the loop's groups visible to other goroutines.
func (n *Node) publish() {
	m := maps.Clone(n.groups)
	n.hosted.Store(&m)
}

// do runs fn on the loop and returns its error.
func (n *Node) do(ctx context.Context, fn func() error) error {
	errc := make(chan error, 1)
	n.mu.Lock()
	n.ctl = append(n.ctl, func() { errc <- fn() })
	n.mu.Unlock()
	n.wake()
	select {
	case err := <-errc:
		return err
	case <-n.stop:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Host starts this node's replica of shard, if it has none. With voters,
// a group with no persisted state starts with them as its first
// configuration (every first replica of a new group is given the same);
// with none it starts empty and waits for its leader's snapshot, as a
// replica added to an existing group does.
func (n *Node) Host(ctx context.Context, shard uint16, voters []uint64) error {
	return n.do(ctx, func() error {
		if n.groups[shard] != nil {
			return nil
		}
		b := n.cfg.Store.NewBatch()
		g, err := n.load(shard, voters, b)
		if err != nil {
			return fmt.Errorf("replica: host shard %d: %w", shard, err)
		}
		if err := n.cfg.Store.Commit(b); err != nil {
			return err
		}
		n.groups[shard] = g
		n.publish()
		if soleVoter(g) {
			return g.rn.Campaign()
		}
		return nil
	})
}

// Unhost stops this node's replica of shard and deletes its log and
// state, once the group's configuration, as applied here, no longer
// counts this node as a voter: a learner's copy is never needed for a
// quorum, and a removed replica may never hear of its removal.
func (n *Node) Unhost(ctx context.Context, shard uint16) error {
	return n.do(ctx, func() error {
		g := n.groups[shard]
		if g == nil {
			return nil
		}
		if slices.Contains(g.conf.GetVoters(), n.cfg.ID) {
			return fmt.Errorf("%w: shard %d", ErrStillMember, shard)
		}
		if g.leader && g.reported {
			n.cfg.StateMachine.Lead(shard, 0)
		}
		delete(n.groups, shard)
		n.publish()
		dropped := make(chan error, 1)
		n.cfg.StateMachine.Drop(shard, func() error {
			b := n.cfg.Store.NewBatch()
			err := b.DropShard(shard)
			if err == nil {
				err = n.cfg.Store.Commit(b)
			}
			if err == nil {
				// What the dropped copy applied is nothing to a copy placed
				// here again later, whose log starts empty: kept, it would
				// have that copy truncate a log it does not have yet.
				n.mu.Lock()
				delete(n.applied, shard)
				n.mu.Unlock()
			}
			dropped <- err
			return err
		})
		select {
		case err := <-dropped:
			return err
		case <-n.stop:
			return ErrStopped
		}
	})
}

// ConfChangeType is a change to a group's configuration.
type ConfChangeType uint8

const (
	// AddLearner adds a replica that receives the log but does not vote.
	AddLearner ConfChangeType = iota + 1
	// Promote makes a learner a voter.
	Promote
	// Remove removes a replica.
	Remove
	// Demote makes a voter a learner: a replica about to be removed
	// first stops voting, so that its node may delete it once it has
	// applied that, whether or not it hears of its removal.
	Demote
)

// ChangeConf changes shard's configuration through its leader, which
// must be this node, and returns once the change is applied here.
func (n *Node) ChangeConf(ctx context.Context, shard uint16, change ConfChangeType, peer uint64) error {
	var typ raftpb.ConfChangeType
	switch change {
	case AddLearner:
		typ = raftpb.ConfChangeType_ConfChangeAddLearnerNode
	case Promote:
		typ = raftpb.ConfChangeType_ConfChangeAddNode
	case Remove:
		typ = raftpb.ConfChangeType_ConfChangeRemoveNode
	case Demote:
		typ = raftpb.ConfChangeType_ConfChangeAddLearnerNode
	default:
		return fmt.Errorf("replica: unknown configuration change %d", change)
	}
	done := make(chan error, 1)
	id := strconv.FormatUint(n.nextConf.Add(1), 10) + "@" + strconv.FormatUint(n.cfg.ID, 10)
	err := n.do(ctx, func() error {
		g := n.groups[shard]
		if g == nil || !g.leader {
			return ErrNotLeader
		}
		cc := &raftpb.ConfChangeV2{
			Changes: []*raftpb.ConfChangeSingle{{Type: typ.Enum(), NodeId: proto.Uint64(peer)}},
			Context: []byte(id),
		}
		if err := g.rn.ProposeConfChange(cc); err != nil {
			return err
		}
		n.confs[id] = confWait{shard: shard, done: done}
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = n.do(context.Background(), func() error { delete(n.confs, id); return nil })
		return ctx.Err()
	case <-n.stop:
		return ErrStopped
	}
}

// confWait is a configuration change awaited.
type confWait struct {
	shard uint16
	done  chan error
}

// confApplied tells whoever awaits a configuration change that it was
// applied.
func (n *Node) confApplied(cc raftpb.ConfChangeI) {
	id := string(cc.AsV2().GetContext())
	if w, ok := n.confs[id]; ok {
		delete(n.confs, id)
		w.done <- nil
	}
}

// failConfs fails the configuration changes awaited on a group this node
// no longer leads: they may yet be applied, or not.
func (n *Node) failConfs(shard uint16) {
	for id, w := range n.confs {
		if w.shard == shard {
			delete(n.confs, id)
			w.done <- ErrNotLeader
		}
	}
}

// awaitTick waits for about one tick.
func (n *Node) awaitTick(ctx context.Context) error {
	select {
	case <-n.cfg.Clock.After(n.cfg.Tick):
		return nil
	case <-n.stop:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TransferLeadership hands shard's leadership from this node to peer and
// returns once this node no longer leads it. This node gives up its lease
// first: the new leader may campaign at once, without waiting for it to
// lapse.
func (n *Node) TransferLeadership(ctx context.Context, shard uint16, peer uint64) error {
	err := n.do(ctx, func() error {
		g := n.groups[shard]
		if g == nil || !g.leader {
			return ErrNotLeader
		}
		if _, ok := g.rn.Status().Config.Voters.IDs()[peer]; !ok {
			return fmt.Errorf("replica: shard %d: node %d is not a voter", shard, peer)
		}
		n.yieldLease(g)
		g.rn.TransferLeader(peer)
		return nil
	})
	if err != nil {
		return err
	}
	for {
		done := false
		err := n.do(ctx, func() error {
			g := n.groups[shard]
			done = g == nil || !g.leader
			if !done && g.rn.Status().LeadTransferee == raft.None {
				// Raft gave up on the transfer (the peer did not catch up
				// within an election timeout): ask again.
				n.yieldLease(g)
				g.rn.TransferLeader(peer)
			}
			return nil
		})
		if err != nil || done {
			return err
		}
		if err := n.awaitTick(ctx); err != nil {
			return err
		}
	}
}

// ShardStatus is what a node knows of one of its groups.
type ShardStatus struct {
	Shard    uint16
	Voters   []uint64
	Learners []uint64
	Leader   uint64 // 0: none known
	Term     uint64
	Applied  uint64 // the state machine's applied index, as written
	Commit   uint64
	// Match is, on the leader, how far each replica's log is known to
	// match the leader's.
	Match map[uint64]uint64
	// Active is, on the leader, whether it heard from each replica within
	// the last election timeout.
	Active map[uint64]bool
}

// Status reports every hosted group.
func (n *Node) Status(ctx context.Context) ([]ShardStatus, error) {
	var out []ShardStatus
	err := n.do(ctx, func() error {
		n.mu.Lock()
		applied := maps.Clone(n.applied)
		n.mu.Unlock()
		for _, shard := range slices.Sorted(maps.Keys(n.groups)) {
			g := n.groups[shard]
			st := g.rn.Status()
			s := ShardStatus{
				Shard: shard, Voters: st.Config.Voters[0].Slice(), Learners: slices.Sorted(maps.Keys(st.Config.Learners)),
				Leader: st.Lead, Term: st.GetTerm(), Applied: applied[shard], Commit: st.GetCommit(),
			}
			if st.RaftState == raft.StateLeader {
				s.Match, s.Active = make(map[uint64]uint64), make(map[uint64]bool)
				g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
					s.Match[id], s.Active[id] = pr.Match, pr.RecentActive
				})
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, err // out may still be written to
	}
	return out, nil
}

package replica

import (
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
)

// run is the node's loop.
func (n *Node) run() {
	defer close(n.done)
	ticker := n.cfg.Clock.NewTicker(n.cfg.Tick)
	defer ticker.Stop()
	more := true // a group may have a Ready left: after Start, or the last turn
	for {
		tick := false
		if more {
			select {
			case <-n.stop:
				return
			case <-ticker.Chan():
				tick = true
			default:
			}
		} else {
			select {
			case <-n.stop:
				return
			case <-n.notify:
			case <-ticker.Chan():
				tick = true
			}
		}
		n.mu.Lock()
		props, msgs, lost, ctl := n.props, n.incoming, n.lost, n.ctl
		n.props, n.incoming, n.lost, n.ctl = nil, nil, nil, nil
		// State written before this turn's sync is durable after it.
		written := maps.Clone(n.applied)
		n.mu.Unlock()
		for _, fn := range ctl {
			fn()
		}
		n.step(props, msgs, tick)
		for _, l := range lost {
			if g := n.groups[l.shard]; g != nil {
				g.rn.ReportUnreachable(l.peer)
			}
		}
		if err := n.ready(written); err != nil {
			n.cfg.Logger.Error("replication stopped after a storage failure", "err", err)
			n.cfg.Failed(err)
			return
		}
		more = n.hasReady()
	}
}

// hasReady reports whether a group has work left, such as entries that
// became committed when the last turn persisted them.
func (n *Node) hasReady() bool {
	for _, g := range n.groups {
		if g.rn.HasReady() {
			return true
		}
	}
	return false
}

// step hands the groups what arrived.
func (n *Node) step(props []proposal, msgs []Envelope, tick bool) {
	for _, e := range msgs {
		g := n.groups[e.Shard]
		if g == nil || deaf(g, e.Msg) || n.stray(g, e.Msg) || n.stale(g, e) {
			continue
		}
		g.added = max(g.added, e.ToAdded)
		_ = g.rn.Step(e.Msg) // a message from an old term or a removed peer is ignored
	}
	for _, p := range n.merge(props) {
		if g := n.groups[p.shard]; g != nil {
			if len(g.held) == 0 {
				n.holding = append(n.holding, g)
			}
			g.held = append(g.held, p.data)
		}
	}
	holding := n.holding[:0]
	for _, g := range n.holding {
		if n.groups[g.shard] == g && n.proposeHeld(g) {
			holding = append(holding, g)
		}
	}
	clear(n.holding[len(holding):])
	n.holding = holding
	if tick {
		for _, g := range n.groups {
			g.rn.Tick()
			g.deafTicks = max(g.deafTicks-1, 0)
			n.watchSnapshots(g)
		}
		n.renewLeases()
		n.syncDue = true
	}
}

// maxMerged bounds the data of proposals merged into one (Raft's largest
// append message).
const maxMerged = 1 << 20

// merge joins, when Config.Mergeable allows it, the proposals to one shard
// that came for this turn into one, in order, up to maxMerged bytes each.
func (n *Node) merge(props []proposal) []proposal {
	if !n.cfg.Mergeable || len(props) < 2 {
		return props
	}
	type joined struct {
		i     int  // in out
		owned bool // out[i].data is a buffer of merge's
	}
	out := props[:0] // written only at or before the proposal read
	at := make(map[uint16]joined)
	for _, p := range props {
		if j, ok := at[p.shard]; ok && len(out[j.i].data)+len(p.data) <= maxMerged {
			d := out[j.i].data
			if !j.owned { // the proposer's: copied, never written
				d = append(make([]byte, 0, 2*(len(d)+len(p.data))), d...)
				at[p.shard] = joined{i: j.i, owned: true}
			}
			out[j.i].data = append(d, p.data...)
			continue
		}
		if p.shard != store.SystemShard {
			at[p.shard] = joined{i: len(out)}
		}
		out = append(out, p)
	}
	return out
}

// deaf reports whether m asks g for a vote while g has not yet counted
// an election timeout since it was loaded. A leader's lease rests on its
// followers refusing other candidates for an election timeout after they
// last heard from it (lease.go), and a replica that restarted forgot when
// that was: granting a vote at once, it could elect a new leader while
// the old one still holds its lease, through this very replica's last
// acknowledgement. Dropping the request is what losing it does.
func deaf(g *group, m *raftpb.Message) bool {
	switch m.GetType() {
	case raftpb.MessageType_MsgVote, raftpb.MessageType_MsgPreVote:
		return g.deafTicks > 0
	}
	return false
}

// stray reports whether m is a heartbeat that commits past g's log, and
// so was meant for an earlier copy of this replica: a leader commits on a
// follower only what that follower acknowledged. A copy dropped from this
// node and placed back starts with an empty log; a heartbeat its leader
// sent the dropped copy can still be on its way, and Raft, stepped with
// it, would stop the node ("tocommit is out of range"). Dropping it is
// what a lost message does.
func (n *Node) stray(g *group, m *raftpb.Message) bool {
	if m.GetType() != raftpb.MessageType_MsgHeartbeat {
		return false
	}
	last, err := g.storage.LastIndex()
	if err != nil || m.GetCommit() <= last {
		return false
	}
	n.cfg.Logger.Warn("dropped a heartbeat meant for an earlier copy of this replica",
		"shard", g.shard, "from", m.GetFrom(), "commit", m.GetCommit(), "last", last)
	return true
}

// stale reports whether e acknowledges what an earlier copy of its
// sender's replica held: its copy was added to the group before the
// change that last added the sender here. Raft names replicas by node, so
// a leader stepped with an acknowledgement the dropped copy sent before
// its removal would take the new, empty copy to hold what the old one
// did: it would count it toward commits and never send it what it lacks.
// Only a message of the leader's own term could do it (Raft ignores older
// ones), and a leader applies every change of its term, so it knows the
// index whenever that matters. Dropping the message is what losing it
// does.
func (n *Node) stale(g *group, e Envelope) bool {
	switch e.Msg.GetType() {
	case raftpb.MessageType_MsgAppResp, raftpb.MessageType_MsgHeartbeatResp:
	default:
		return false
	}
	added := g.peerAdded[e.Msg.GetFrom()]
	if e.FromAdded >= added {
		return false
	}
	n.cfg.Logger.Warn("dropped an acknowledgement from an earlier copy of a replica",
		"shard", g.shard, "from", e.Msg.GetFrom(), "type", e.Msg.GetType().String(), "copy", e.FromAdded, "added", added)
	return true
}

// proposeHeld hands g's proposals to raft in order, and reports whether
// some are still held. A proposal on a node that does not lead is
// dropped: the state machine finds out when its leadership ends. But
// raft also drops proposals on a leader while it hands its leadership
// over; if the hand-over fails, the node goes on leading, and a dropped
// proposal would leave the state machine waiting for it for good. So a
// leader holds its proposals until the hand-over ends, then proposes
// them, in order and before any later ones; if it no longer leads by
// then, leadership drops them.
func (n *Node) proposeHeld(g *group) bool {
	for i, data := range g.held {
		if err := g.rn.Propose(data); err != nil && g.leader {
			g.held = slices.Delete(g.held, 0, i)
			return true
		}
	}
	g.held = nil
	return false
}

// groupReady is one group's Ready of this turn.
type groupReady struct {
	g     *group
	rd    raft.Ready
	early int // committed entries given to the state machine before the sync
}

// ready handles the Ready of every group that has one: committed entries
// this node already holds durably, and does not replace in this turn, go
// to the state machine at once, and messages that do not vouch for this
// node's storage go out; then new entries and hard states are persisted
// in one batch, the other messages sent, the remaining committed entries
// applied, the groups advanced. Applying before the sync lets an entry
// committed by the last turn's sync take effect while this turn's syncs,
// instead of after it; sending a leader's appends before the sync lets
// followers write them while the leader does (see send).
func (n *Node) ready(written map[uint16]uint64) error {
	// Before this turn sends anything: a leader elected in it dates its
	// lease from here (see lease.go).
	n.turn = n.cfg.Clock.Now()
	var rds []groupReady
	for _, g := range n.groups {
		if !g.rn.HasReady() {
			continue
		}
		rd := g.rn.Ready()
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := n.restore(g, rd.Snapshot, rd.HardState); err != nil {
				return err
			}
		}
		// Entries this turn writes are not durable yet, even at indexes
		// the log held before: a new leader's entries can replace some
		// and be committed in the same Ready.
		held := g.persisted
		if len(rd.Entries) > 0 {
			held = min(held, rd.Entries[0].GetIndex()-1)
		}
		early := 0
		for early < len(rd.CommittedEntries) && rd.CommittedEntries[early].GetIndex() <= held {
			early++
		}
		rds = append(rds, groupReady{g: g, rd: rd, early: early})
	}
	if err := n.commit(rds, true); err != nil {
		return err
	}
	n.send(rds, false)
	if err := n.persist(rds, written); err != nil {
		return err
	}
	return n.settle(rds)
}

// send sends the messages of this turn's Readys that must wait for its
// write (durable), or the others. Only responses vouch for this node's
// storage: an append's acknowledgement and a vote must not be seen before
// what they acknowledge is durable. Everything else (a leader's appends
// and heartbeats, a candidate's vote requests, forwarded proposals) may
// go before, as with Raft's asynchronous storage writes: a leader writes
// its log in parallel with its followers (Raft thesis, 10.2.1), and Raft
// counts the leader's own copy toward a commit only once Advance says it
// is written. Readys list the responses after the rest, so each peer
// still gets a turn's messages in order.
func (n *Node) send(rds []groupReady, durable bool) {
	if n.cfg.Transport == nil {
		return
	}
	var out []Envelope
	for _, r := range rds {
		for _, m := range r.rd.Messages {
			if vouches(m) == durable {
				out = append(out, Envelope{Shard: r.g.shard, Msg: m, ToAdded: r.g.peerAdded[m.GetTo()], FromAdded: r.g.added})
			}
		}
	}
	if len(out) > 0 {
		n.cfg.Transport.Send(n.cfg.ID, out)
	}
}

// vouches reports whether m tells its receiver what this node's storage
// holds.
func vouches(m *raftpb.Message) bool {
	switch m.GetType() {
	case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp:
		return true
	}
	return false
}

// persist writes every group's new entries and hard state, and truncates
// logs, in one batch, synced if any group needs it.
//
// A hard state is written only when its term or vote changed. Its commit
// index changes nearly every turn of a busy group, but Raft keeps it in
// volatile state: a node restarted with an older one learns it again
// from its leader (or, alone, by committing an entry of its new term),
// and load raises it to the applied index, whose state says those
// entries were committed. So a turn costs no write of it per group.
func (n *Node) persist(rds []groupReady, written map[uint16]uint64) error {
	b := n.logBatch()
	sync := false
	for _, r := range rds {
		g, hs := r.g, r.rd.HardState
		if err := b.AppendRaftEntries(g.shard, r.rd.Entries, g.persisted); err != nil {
			return err
		}
		if !raft.IsEmptyHardState(hs) && (hs.GetTerm() != g.savedTerm || hs.GetVote() != g.savedVote) {
			if err := b.SetRaftHardState(g.shard, hs); err != nil {
				return err
			}
			g.savedTerm, g.savedVote = hs.GetTerm(), hs.GetVote()
		}
		sync = sync || r.rd.MustSync
	}
	if err := n.compact(b); err != nil {
		return err
	}
	// An idle shard's state waits for a sync to become durable, and its
	// log for that to be truncated: once a tick, if some log could go,
	// sync even with nothing else to write.
	if n.syncDue {
		n.syncDue = false
		sync = sync || n.truncatable(written)
	}
	switch {
	case b.Count() > 0 && sync:
		if err := n.cfg.Store.Commit(b); err != nil {
			return err
		}
	case b.Count() > 0:
		if err := n.cfg.Store.CommitNoSync(b); err != nil {
			return err
		}
	case sync:
		if err := n.cfg.Store.Sync(); err != nil {
			return err
		}
	}
	if sync {
		for shard, w := range written {
			if g := n.groups[shard]; g != nil {
				g.durable = max(g.durable, w)
			}
		}
	}
	return nil
}

// logBatch returns the node's batch for its log writes, emptied: one
// batch serves every Ready, so that its buffer is allocated once.
func (n *Node) logBatch() *store.Batch {
	if n.batch == nil {
		n.batch = n.cfg.Store.NewBatch()
	} else {
		n.batch.Reset()
	}
	return n.batch
}

// settle finishes the persisted Readys: the in-memory log, messages,
// the remaining committed entries, leadership, Advance.
func (n *Node) settle(rds []groupReady) error {
	for _, r := range rds {
		g, rd := r.g, r.rd
		if err := g.storage.Append(rd.Entries); err != nil {
			return err
		}
		if len(rd.Entries) > 0 {
			g.persisted = rd.Entries[len(rd.Entries)-1].GetIndex()
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			if err := g.storage.SetHardState(rd.HardState); err != nil {
				return err
			}
		}
	}
	n.send(rds, true)
	for _, r := range rds {
		if r.rd.SoftState != nil {
			n.leadership(r.g, r.rd.SoftState.RaftState == raft.StateLeader)
		}
		n.confirmed(r.g, r.rd)
		n.readsDone(r.rd)
	}
	if err := n.commit(rds, false); err != nil {
		return err
	}
	for _, r := range rds {
		n.reportLead(r.g, r.rd.CommittedEntries)
		r.g.rn.Advance(r.rd)
	}
	return nil
}

// commit gives the state machine the groups' committed entries: those
// before each group's early mark, or those after it.
func (n *Node) commit(rds []groupReady, early bool) error {
	var committed []Committed
	for _, r := range rds {
		ents := r.rd.CommittedEntries[r.early:]
		if early {
			ents = r.rd.CommittedEntries[:r.early]
		}
		for _, e := range ents {
			if err := n.confChange(r.g, e); err != nil {
				return err
			}
		}
		if len(ents) > 0 {
			committed = append(committed, Committed{Shard: r.g.shard, Entries: ents})
		}
	}
	if len(committed) > 0 {
		n.cfg.StateMachine.Apply(committed)
	}
	return nil
}

// reportLead tells the state machine that this node leads g once an entry
// of its own term is given to it: every entry committed before is then.
func (n *Node) reportLead(g *group, committed []*raftpb.Entry) {
	if g.leader && !g.reported && len(committed) > 0 && committed[len(committed)-1].GetTerm() == g.term {
		g.reported = true
		n.grantLease(g)
		n.cfg.StateMachine.Lead(g.shard, g.term)
	}
}

// leadership follows the group's role.
func (n *Node) leadership(g *group, leader bool) {
	switch {
	case leader && !g.leader:
		g.leader, g.term, g.reported = true, g.rn.BasicStatus().HardState.GetTerm(), false
		g.leaderSince = n.turn
		n.cfg.Logger.Debug("leading", "shard", g.shard, "term", g.term)
	case !leader && g.leader:
		g.leader, g.held = false, nil
		g.lease.Store(0)
		n.failConfs(g.shard)
		if g.reported {
			g.reported = false
			n.cfg.StateMachine.Lead(g.shard, 0)
		}
		n.cfg.Logger.Debug("no longer leading", "shard", g.shard)
	}
}

// confChange applies a committed configuration change.
func (n *Node) confChange(g *group, e *raftpb.Entry) error {
	cc, err := decodeConfChange(e)
	if err != nil || cc == nil {
		return err
	}
	g.applyConf(cc, e.GetIndex())
	n.recheckLease(g)
	n.confApplied(cc)
	return nil
}

// applyConf makes cc, the change of log entry index, the group's
// configuration.
func (g *group) applyConf(cc raftpb.ConfChangeI, index uint64) {
	before := members(g.conf)
	g.conf = g.rn.ApplyConfChange(cc)
	g.storage.setConf(index, g.conf)
	for _, id := range members(g.conf) {
		if slices.Contains(before, id) {
			continue
		}
		g.peerAdded[id] = index
		if id == g.self {
			g.added = max(g.added, index)
		}
	}
}

// members returns the replicas a configuration holds, voters or learners.
func members(c *raftpb.ConfState) []uint64 {
	return slices.Concat(c.GetVoters(), c.GetVotersOutgoing(), c.GetLearners(), c.GetLearnersNext())
}

// decodeConfChange returns the configuration change an entry holds, or
// nil for an entry of another type.
func decodeConfChange(e *raftpb.Entry) (raftpb.ConfChangeI, error) {
	switch e.GetType() {
	case raftpb.EntryType_EntryConfChange:
		var c raftpb.ConfChange
		if err := proto.Unmarshal(e.Data, &c); err != nil {
			return nil, err
		}
		return &c, nil
	case raftpb.EntryType_EntryConfChangeV2:
		var c raftpb.ConfChangeV2
		if err := proto.Unmarshal(e.Data, &c); err != nil {
			return nil, err
		}
		return &c, nil
	}
	return nil, nil
}

// truncatable reports whether the state written would let some log be
// truncated once it is durable.
func (n *Node) truncatable(written map[uint16]uint64) bool {
	for shard, w := range written {
		if g := n.groups[shard]; g != nil && w > g.durable && w >= g.truncated+n.cfg.CompactEvery {
			return true
		}
	}
	return false
}

// maxLagCompactions is how many CompactEvery a follower may lag before a
// leader stops keeping its log for it.
const maxLagCompactions = 8

// compact truncates the logs whose applied, durable state has grown
// CompactEvery entries past their start. A leader keeps what a follower
// at most maxLag entries behind still needs; one further behind, or
// gone, gets a snapshot instead.
func (n *Node) compact(b *store.Batch) error {
	maxLag := maxLagCompactions * n.cfg.CompactEvery
	for shard, g := range n.groups {
		if g.durable < g.truncated+n.cfg.CompactEvery {
			continue
		}
		upTo := g.durable
		if g.leader {
			g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
				if id != n.cfg.ID && pr.Match+maxLag >= g.durable {
					upTo = min(upTo, pr.Match)
				}
			})
		}
		if upTo < g.truncated+n.cfg.CompactEvery {
			continue
		}
		term, err := g.storage.Term(upTo)
		if err != nil {
			return err
		}
		meta := &raftpb.SnapshotMetadata{Index: proto.Uint64(upTo), Term: proto.Uint64(term), ConfState: g.conf}
		if err := b.CompactRaftLog(shard, g.truncated+1, meta); err != nil {
			return err
		}
		if err := g.storage.Compact(upTo); err != nil {
			return err
		}
		g.truncated = upTo
	}
	return nil
}

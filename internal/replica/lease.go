package replica

import (
	"encoding/binary"
	"math"
	"time"

	"go.etcd.io/raft/v3"
)

// Leases. Raft lets a deposed leader believe it still leads until it
// hears of the new term, which may be long when it is cut off. A shard's
// leader therefore fires and reads only under a lease: the time until
// which no other node can have been elected.
//
// With CheckQuorum, a follower that heard from its leader less than an
// election timeout ago refuses to vote (etcd raft's leader lease). So when
// a quorum answers a heartbeat the leader sent at t, none of them votes
// for another node before t plus the election timeout, and no other node
// can win before then: the leader holds the lease until t plus the
// election timeout, less three ticks. A follower counts the timeout in
// its own ticks, whose phase differs from the leader's (one tick), and
// may count a tick that was waiting in its ticker at once after the
// heartbeat that reset it (another); the third keeps a real gap between
// one leader's lease and the next one's. The first lease comes with the
// commit of the leader's own first entry, which a quorum accepted after it
// was elected; the loop renews it every tick with a ReadIndex round, whose
// heartbeat carries its send time. A group of one voter holds its lease
// for good.
//
// A replica that restarted forgot when it last heard from a leader, so it
// ignores vote requests for an election timeout (see deaf). Lease times
// are kept as the time since the node's epoch, by the monotonic clock: a
// wall clock set back (by NTP, an operator, a VM's migration) must not
// lengthen a lease.

// leaseSpan returns how long an acknowledgement sent at t keeps the lease.
func (n *Node) leaseSpan() time.Duration {
	return time.Duration(n.cfg.ElectionTicks-3) * n.cfg.Tick
}

// Leased reports whether this node holds the lease of shard: it leads
// it, and no other node can have been elected since.
func (n *Node) Leased(shard uint16) bool {
	g := n.group(shard)
	return g != nil && n.since(n.cfg.Clock.Now()) < g.lease.Load()
}

// since returns the nanoseconds from the node's epoch to t, by the
// monotonic clock when t has a reading of it (the real clock's times do).
func (n *Node) since(t time.Time) int64 { return int64(t.Sub(n.epoch)) }

// LeaseExpiry returns when this node's lease of shard ends, in the node's
// clock: the zero time if it holds none, far in the future for a sole
// voter.
func (n *Node) LeaseExpiry(shard uint16) time.Time {
	g := n.group(shard)
	if g == nil || g.lease.Load() == 0 {
		return time.Time{}
	}
	if g.lease.Load() == math.MaxInt64 {
		return time.Unix(0, math.MaxInt64)
	}
	return n.epoch.Add(time.Duration(g.lease.Load()))
}

// grantLease starts g's lease when its leadership is reported.
func (n *Node) grantLease(g *group) {
	if soleVoter(g) {
		g.lease.Store(math.MaxInt64)
		return
	}
	n.extendLease(g, g.leaderSince)
}

// recheckLease ends a sole voter's lease for good once the group has
// other voters: from then on it must be renewed.
func (n *Node) recheckLease(g *group) {
	if g.lease.Load() == math.MaxInt64 && !soleVoter(g) {
		g.lease.Store(0)
	}
}

// soleVoter reports whether g's only voter is this node.
func soleVoter(g *group) bool {
	c := g.rn.Status().Config.Voters
	return len(c[0]) == 1 && len(c[1]) == 0
}

// extendLease moves g's lease to what an acknowledgement of a message sent
// at sent gives, and tells the state machine when a lapsed lease is
// regained.
func (n *Node) extendLease(g *group, sent time.Time) {
	if sent.Before(g.leaseFloor) {
		return // asked before the lease was yielded
	}
	until := n.since(sent.Add(n.leaseSpan()))
	old := g.lease.Load()
	if until <= old {
		return
	}
	g.lease.Store(until)
	if old <= n.since(n.cfg.Clock.Now()) {
		n.cfg.StateMachine.Leased(g.shard)
	}
}

// renewLeases asks every group this node leads with others to confirm
// its leadership: a ReadIndex round whose context is its send time (since
// the node's epoch).
func (n *Node) renewLeases() {
	ctx := binary.BigEndian.AppendUint64(nil, uint64(n.since(n.cfg.Clock.Now())))
	for _, g := range n.groups {
		if g.reported && g.lease.Load() != math.MaxInt64 && g.rn.BasicStatus().LeadTransferee == 0 {
			g.rn.ReadIndex(ctx)
		}
	}
}

// yieldLease gives up g's lease before a leadership transfer: the
// transferee campaigns at once, ignoring the followers' leases, so this
// node must stop acting as leader now, and no confirmation of an earlier
// round may extend the lease again.
func (n *Node) yieldLease(g *group) {
	g.lease.Store(0)
	g.leaseFloor = n.cfg.Clock.Now()
}

// confirmed extends g's lease for each leadership confirmation in rd.
func (n *Node) confirmed(g *group, rd raft.Ready) {
	if !g.leader {
		return
	}
	for _, rs := range rd.ReadStates {
		if len(rs.RequestCtx) == 8 {
			n.extendLease(g, n.epoch.Add(time.Duration(binary.BigEndian.Uint64(rs.RequestCtx))))
		}
	}
}

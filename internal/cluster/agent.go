package cluster

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
)

// agent makes this node's replicas match the map, on every change and
// every interval.
func (m *Member) agent(ctx context.Context) {
	for {
		if st, err := m.read(ctx); err == nil && st.Map != nil {
			if err := m.reconcile(ctx, st.Map); err != nil && ctx.Err() == nil {
				m.log.Info("placement step not taken; trying again", "err", err)
			}
		} else if err != nil && ctx.Err() == nil {
			m.log.Debug("etcd unavailable; placement waits", "err", err)
		}
		if !m.next(ctx) {
			return
		}
	}
}

// reconcile takes one step towards the map for each shard: hosting what
// the map gives this node, changing the groups it leads, dropping
// replicas it no longer holds.
func (m *Member) reconcile(ctx context.Context, sm *ShardMap) error {
	status, err := m.cfg.Local.Status(ctx)
	if err != nil {
		return err
	}
	hosted := make(map[uint16]replica.ShardStatus, len(status))
	for _, s := range status {
		hosted[s.Shard] = s
	}
	var errs []error
	sm.each(func(shard uint16, p *Placement) {
		if len(p.Replicas) > 0 { // a map written before the system group was placed does not place it
			errs = append(errs, m.reconcileShard(ctx, sm.Revision, shard, *p, hosted))
		}
	})
	return errors.Join(errs...)
}

// reconcileShard takes one step towards p for shard.
func (m *Member) reconcileShard(ctx context.Context, rev int64, shard uint16, p Placement, hosted map[uint16]replica.ShardStatus) error {
	me := m.cfg.Node.ID
	s, ok := hosted[shard]
	if _, seen := m.unplaced[shard]; ok && !p.holds(me) && !seen {
		m.unplaced[shard] = time.Now()
	} else if !ok || p.holds(me) {
		delete(m.unplaced, shard)
	}
	switch {
	case !ok && p.holds(me):
		var voters []uint64
		if slices.Contains(p.Initial, me) {
			voters = p.Initial
		}
		return m.cfg.Local.Host(ctx, shard, voters)
	case !ok:
	case s.Leader == me:
		return m.lead(ctx, rev, shard, p, s)
	case drops(p, s, me, time.Since(m.unplaced[shard])):
		m.log.Info("dropping a replica no longer placed here", "shard", shard)
		return m.cfg.Local.Unhost(ctx, shard)
	}
	return nil
}

// drops reports whether node me, which hosts s and does not lead it,
// may delete its copy, which p has not placed here for unplacedFor: it
// does not vote, and either its group does not count it (it was removed,
// or placed elsewhere before its leader added it: it holds nothing, and
// left alone it would stay forever) or it is a learner not placed here
// for learnerGrace.
func drops(p Placement, s replica.ShardStatus, me uint64, unplacedFor time.Duration) bool {
	switch {
	case p.holds(me), slices.Contains(s.Voters, me):
		return false
	case slices.Contains(s.Learners, me):
		return unplacedFor >= learnerGrace
	}
	return true
}

// learnerGrace is how long a learner's copy that the map no longer
// places here is kept. Its leader removes it from the group meanwhile,
// so that placed here again later it joins afresh. Deleted while its
// leader still counts it, then placed back at once, it would come back
// empty under the progress its leader remembers: the leader would send
// it only what follows that progress, and it would never catch up. A
// learner its leader removed may never hear of it: past the grace it
// goes anyway.
const learnerGrace = 10 * time.Second

func member(s replica.ShardStatus, id uint64) bool {
	return slices.Contains(s.Voters, id) || slices.Contains(s.Learners, id)
}

// lead takes the next step of a group this node leads towards its
// placement p, fenced by the map's revision.
func (m *Member) lead(ctx context.Context, rev int64, shard uint16, p Placement, s replica.ShardStatus) error {
	me := m.cfg.Node.ID
	alive := func(id uint64) bool {
		_, ok := m.State().Nodes[id]
		return ok
	}
	change, peer, transfer := nextStep(p, s, m.cfg.CatchUpLag, me, alive)
	if change == 0 && transfer == 0 {
		return nil
	}
	if err := m.fence(ctx, rev); err != nil {
		return err
	}
	// A step is bounded: raft may drop a proposed change (another one is
	// still being applied, the leadership moved), and a step that waits
	// for it would hold up every other shard's. The next pass looks again.
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if transfer != 0 {
		m.log.Info("handing the leadership over", "shard", shard, "to", transfer)
		return m.cfg.Local.TransferLeadership(ctx, shard, transfer)
	}
	m.log.Info("changing a shard's replicas", "shard", shard, "change", changeName[change], "node", peer)
	return m.cfg.Local.ChangeConf(ctx, shard, change, peer)
}

// stepTimeout bounds one placement step of a group this node leads.
const stepTimeout = 5 * time.Second

var changeName = map[replica.ConfChangeType]string{replica.AddLearner: "add learner", replica.Promote: "promote", replica.Remove: "remove", replica.Demote: "demote"}

// nextStep is the one change that brings group s (led by me) closer to
// placement p: add a missing replica as a learner; promote a learner
// that caught up (unless p keeps it a learner); remove a learner not
// wanted once it caught up, or its node is gone, or it never answered
// (its node dropped the copy before the learner was added, so it would
// never catch up); once every wanted replica votes, demote a voter not
// wanted to a learner, handing the leadership over first if it is me;
// then transfer the leadership to the preferred leader. alive reports
// whether a node is a member of the cluster.
func nextStep(p Placement, s replica.ShardStatus, lag, me uint64, alive func(uint64) bool) (change replica.ConfChangeType, peer, transfer uint64) {
	caughtUp := func(id uint64) bool {
		match, ok := s.Match[id]
		return ok && match > 0 && match+lag >= s.Commit
	}
	for _, id := range slices.Concat(p.Replicas, p.Learners) {
		if !member(s, id) {
			return replica.AddLearner, id, 0
		}
	}
	// silent: not heard from within an election timeout and nothing
	// acknowledged. A live copy answers every heartbeat, so a silent
	// learner has no copy left that could miss its removal.
	silent := func(id uint64) bool { return s.Match[id] == 0 && !s.Active[id] }
	waiting := false // for a learner to catch up and vote
	for _, id := range s.Learners {
		if slices.Contains(p.Learners, id) {
			continue // stays a learner
		}
		if !slices.Contains(p.Replicas, id) {
			// A live learner leaving is removed once it caught up, so
			// that it has applied its demotion and may delete its copy.
			if caughtUp(id) || !alive(id) || silent(id) {
				return replica.Remove, id, 0
			}
			continue
		}
		if caughtUp(id) {
			return replica.Promote, id, 0
		}
		waiting = true
	}
	if waiting || slices.ContainsFunc(s.Learners, func(id uint64) bool { return !p.holds(id) }) {
		return 0, 0, 0 // wait for them before removing voters
	}
	for _, id := range s.Voters {
		if slices.Contains(p.Replicas, id) {
			continue
		}
		if id != me {
			return replica.Demote, id, 0
		}
		if to := successor(p, caughtUp); to != 0 {
			return 0, 0, to
		}
		return 0, 0, 0
	}
	if p.Leader != 0 && p.Leader != me && slices.Contains(s.Voters, p.Leader) && caughtUp(p.Leader) {
		return 0, 0, p.Leader
	}
	return 0, 0, 0
}

// successor picks who takes over from a leader that leaves the group:
// the preferred leader, else any wanted replica that caught up.
func successor(p Placement, caughtUp func(uint64) bool) uint64 {
	if caughtUp(p.Leader) {
		return p.Leader
	}
	for _, id := range p.Replicas {
		if caughtUp(id) {
			return id
		}
	}
	return 0
}

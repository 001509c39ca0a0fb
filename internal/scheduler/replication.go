package scheduler

import (
	"context"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
)

// The scheduler is its shards' state machine: the replica node feeds it
// the committed log entries and tells it which shards this node leads.

// startNode reads what the partitions follow of their shards and makes
// the replica node; Start starts it once the loops run.
func (s *Scheduler) startNode() error {
	for _, p := range s.parts {
		if err := p.load(); err != nil {
			return err
		}
	}
	var shards []uint16
	if !s.cfg.Placed {
		shards = make([]uint16, s.cfg.Store.Shards())
		for i := range shards {
			shards[i] = uint16(i)
		}
		if s.cfg.System != nil {
			shards = append(shards, store.SystemShard)
		}
	}
	node, err := replica.New(replica.Config{
		ID: s.cfg.NodeID, Peers: s.cfg.Peers, Shards: shards,
		Store: s.cfg.Store, StateMachine: s, Mergeable: true, System: s.cfg.System, Transport: s.cfg.Transport,
		Tick: s.cfg.RaftTick, ElectionTicks: s.cfg.ElectionTicks, CompactEvery: s.cfg.LogRetention,
		Failed: s.fail, Logger: s.cfg.Logger.With("component", "replica"),
	})
	s.node = node
	return err
}

// Node returns the replica node of the scheduler's shards, for a
// transport to deliver to.
func (s *Scheduler) Node() *replica.Node { return s.node }

// AppliedIndex implements replica.StateMachine.
func (s *Scheduler) AppliedIndex(shard uint16) (uint64, error) {
	m, err := s.cfg.Store.ShardMeta(shard)
	return m.GetApplied(), err
}

// Apply implements replica.StateMachine: each partition applies its
// shards' entries on its loop.
func (s *Scheduler) Apply(committed []replica.Committed) {
	byPart := make(map[*partition][]replica.Committed)
	for _, c := range committed {
		p := s.partitionOf(c.Shard)
		byPart[p] = append(byPart[p], c)
	}
	for p, cs := range byPart {
		p.inbox.post(func() { p.apply(cs) })
	}
}

// Lead implements replica.StateMachine.
func (s *Scheduler) Lead(shard uint16, term uint64) {
	p := s.partitionOf(shard)
	p.inbox.post(func() { p.lead(shard, term) })
}

// Leased implements replica.StateMachine.
func (s *Scheduler) Leased(shard uint16) {
	p := s.partitionOf(shard)
	p.inbox.post(func() { p.leased(shard) })
}

// Restore implements replica.StateMachine: the shard's partition writes
// the snapshot once it has applied everything before it, then takes the
// shard's marks from the store.
func (s *Scheduler) Restore(shard uint16, write func() error) {
	p := s.partitionOf(shard)
	p.inbox.post(func() {
		p.waitFollowers(&shard)
		if err := write(); err != nil {
			p.s.fail(err)
			return
		}
		if err := p.loadShard(shard); err != nil {
			p.s.fail(err)
		}
	})
}

// Drop implements replica.StateMachine: the shard's partition deletes
// its state once it has applied everything before, and forgets it.
func (s *Scheduler) Drop(shard uint16, write func() error) {
	p := s.partitionOf(shard)
	p.inbox.post(func() {
		p.waitFollowers(&shard)
		if p.leads(shard) {
			p.follow(shard)
		}
		if err := write(); err != nil {
			p.s.fail(err)
			return
		}
		if err := p.loadShard(shard); err != nil {
			p.s.fail(err)
		}
	})
}

// leaderReady counts a shard led for the first time; Start of a
// standalone node waits for all of them.
func (s *Scheduler) leaderReady(*partition) {
	if s.led.Add(1) == int64(s.cfg.Store.Shards()) {
		close(s.allLed)
	}
}

// onLeader runs op on the loop of shard's partition if this node leads
// the shard, and answers ErrNotLeader otherwise.
func (s *Scheduler) onLeader(ctx context.Context, shard uint16, op func(p *partition, done func(result))) (result, error) {
	if int(shard) >= s.cfg.Store.Shards() {
		return result{}, ErrNotFound // an id no task of this store has
	}
	p := s.partitionOf(shard)
	return s.call(ctx, p, func(done func(result)) {
		if !p.leads(shard) {
			done(result{err: &NotLeaderError{Shard: shard}})
			return
		}
		op(p, done)
	})
}

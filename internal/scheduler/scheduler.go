package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
)

// Scheduler is the durable task lifecycle. Create it with New, then Start
// it (which recovers from the store) and Stop it when done. Its methods
// are safe for concurrent use.
type Scheduler struct {
	cfg   Config
	parts []*partition
	rr    atomic.Uint32

	deliveries  atomic.Int64 // attempts under way
	counters    counters
	deadLetters *deadLetterCounts
	failure     atomic.Pointer[error]

	node   *replica.Node
	led    atomic.Int64  // shards led once
	allLed chan struct{} // closed once every shard was led

	started                        atomic.Bool
	startOnce, stopOnce, abortOnce sync.Once
	stop                           chan struct{} // closed: stop firing, drain attempts
	abort                          chan struct{} // closed: exit now
	sweeper                        sync.WaitGroup
}

// New checks cfg and builds a scheduler; it does not touch the store yet.
func New(cfg Config) (*Scheduler, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg: cfg, stop: make(chan struct{}), abort: make(chan struct{}), allLed: make(chan struct{}),
		deadLetters: newDeadLetterCounts(cfg.DeadLetterPolicy),
	}
	for i := range cfg.Partitions {
		p, err := newPartition(s, i)
		if err != nil {
			return nil, err
		}
		s.parts = append(s.parts, p)
	}
	return s, nil
}

// Start recovers every partition from the store and starts the loops.
// It returns once the scheduler is ready to take requests.
func (s *Scheduler) Start(ctx context.Context) error {
	err := ErrClosed
	s.startOnce.Do(func() { err = s.start(ctx) })
	return err
}

func (s *Scheduler) start(ctx context.Context) error {
	if err := s.startNode(); err != nil {
		return err
	}
	if err := s.countDeadLetters(); err != nil {
		return err
	}
	s.started.Store(true)
	for _, p := range s.parts {
		p.startClock()
		p.inbox.open()
		go p.run(s.stop, s.abort)
	}
	if err := s.node.Start(); err != nil {
		s.shutdown()
		return fmt.Errorf("scheduler: replication: %w", err)
	}
	s.sweeper.Go(func() { s.sweep(s.stop) })
	if len(s.cfg.Peers) > 1 || s.cfg.Placed {
		return nil // a cluster's shards get their leaders as it goes
	}
	select {
	case <-s.allLed:
		return nil
	case <-ctx.Done():
		s.shutdown()
		return ctx.Err()
	}
}

// Stop stops taking requests and firing tasks, waits for the delivery
// attempts under way to finish and their outcomes to be applied, then
// stops. Tasks that were due but not yet delivered stay in the store and
// fire after the next Start. If ctx ends first, Stop returns ctx.Err()
// without waiting further; attempts still under way are then delivered
// again after a restart. Stop may be called more than once.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		for _, p := range s.parts {
			p.inbox.close()
		}
		close(s.stop)
	})
	if !s.started.Load() {
		return nil
	}
	s.sweeper.Wait()
	defer s.node.Stop()
	for _, p := range s.parts {
		select {
		case <-p.done:
		case <-ctx.Done():
			// Stop where we are, as a crash would: what was not applied
			// is applied again from the log after the next Start.
			s.shutdown()
			return ctx.Err()
		}
	}
	return s.err()
}

// shutdown ends the loops at once.
func (s *Scheduler) shutdown() {
	s.abortOnce.Do(func() { close(s.abort) })
	for _, p := range s.parts {
		p.inbox.close()
	}
	for _, p := range s.parts {
		<-p.done
	}
}

// fail stops the scheduler after a storage error: the store holds exactly
// what was acknowledged, and nothing more may be decided on top of state
// that could not be written.
func (s *Scheduler) fail(err error) {
	if s.failure.CompareAndSwap(nil, &err) {
		s.cfg.Logger.Error("scheduler stopped after a storage failure; restart the server once the disk is fixed", "err", err)
		s.stopOnce.Do(func() {
			for _, p := range s.parts {
				p.inbox.close()
			}
			close(s.stop)
		})
	}
}

// Err returns the storage failure that stopped the scheduler, or nil
// while it can serve.
func (s *Scheduler) Err() error { return s.failed() }

func (s *Scheduler) failed() error {
	if e := s.failure.Load(); e != nil {
		return *e
	}
	return nil
}

func (s *Scheduler) err() error {
	if e := s.failed(); e != nil {
		return fmt.Errorf("%w: %w", ErrClosed, e)
	}
	return nil
}

// call runs op on partition p's loop and waits for its answer. A call
// abandoned by ctx may still take effect.
func (s *Scheduler) call(ctx context.Context, p *partition, op func(done func(result))) (result, error) {
	ch := make(chan result, 1)
	if err := p.inbox.request(func() { op(func(r result) { ch <- r }) }); err != nil {
		if e := s.err(); e != nil {
			return result{}, e
		}
		return result{}, err
	}
	select {
	case r := <-ch:
		return r, r.err
	case <-p.done:
		select {
		case r := <-ch:
			return r, r.err
		default:
		}
		if e := s.err(); e != nil {
			return result{}, e
		}
		return result{}, ErrClosed
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
}

func (s *Scheduler) partitionOf(shard uint16) *partition {
	return s.parts[int(shard)&(len(s.parts)-1)]
}

// Register schedules a task. created is false when an idempotency key
// matched an earlier registration, whose task is returned instead.
func (s *Scheduler) Register(ctx context.Context, req RegisterRequest) (view TaskView, created bool, err error) {
	if err := s.validateRegister(&req); err != nil {
		return TaskView{}, false, err
	}
	shard, anywhere := s.keyShard(&req)
	if anywhere {
		shard = s.anyShard()
	}
	r, err := s.onLeader(ctx, shard, func(p *partition, done func(result)) {
		sh := shard
		if anywhere {
			sh = p.place(shard, len(req.Payload))
		}
		p.register(&req, sh, done)
	})
	return r.view, r.created, err
}

// keyShard is the shard a new task's group, or its idempotency or
// replace key, places it on (so that a repeat finds it); anywhere
// reports that nothing does.
func (s *Scheduler) keyShard(req *RegisterRequest) (shard uint16, anywhere bool) {
	switch {
	case req.Group != "":
		return s.cfg.Store.GroupShard(req.Client, req.Group), false
	case req.IdempotencyKey != "":
		return s.cfg.Store.GroupShard(req.Client, "\x00"+req.IdempotencyKey), false
	case req.ReplaceKey != "":
		return s.cfg.Store.ReplaceKeyShard(req.Client, req.ReplaceKey), false
	}
	return 0, true
}

// anyShard is the next shard in turn that this node leads, so that a
// node of a cluster places the tasks that may go anywhere itself; a node
// that leads nothing answers ErrNotLeader for the first shard tried. The
// partition of the shard may place the task on another of its shards
// (partition.place).
func (s *Scheduler) anyShard() uint16 {
	n := uint32(s.cfg.Store.Shards())
	first := s.rr.Add(1)
	for i := range n {
		if shard := uint16((first + i) % n); s.node.Leased(shard) {
			return shard
		}
	}
	return uint16(first % n)
}

// Update changes a task's payload, due time or interval.
func (s *Scheduler) Update(ctx context.Context, c Caller, req UpdateRequest) (TaskView, error) {
	if err := s.validateUpdate(&req); err != nil {
		return TaskView{}, err
	}
	r, err := s.onLeader(ctx, store.ShardOf(req.ID), func(p *partition, done func(result)) { p.update(c, &req, done) })
	return r.view, err
}

// Cancel deletes a task. It fails with ErrInFlight while an attempt is
// under way; once it returns nil the task never fires again.
func (s *Scheduler) Cancel(ctx context.Context, c Caller, id uint64) error {
	_, err := s.onLeader(ctx, store.ShardOf(id), func(p *partition, done func(result)) { p.cancel(c, id, done) })
	return err
}

// Get returns a task and its status.
func (s *Scheduler) Get(ctx context.Context, c Caller, id uint64) (TaskView, error) {
	shard := store.ShardOf(id)
	r, err := s.onLeader(ctx, shard, func(p *partition, done func(result)) {
		// Only under the lease: a deposed leader that does not know it yet
		// could answer without a change the new one acknowledged.
		if !s.node.Leased(shard) {
			done(result{err: &NotLeaderError{Shard: shard}})
			return
		}
		p.get(c, id, done)
	})
	return r.view, err
}

// Unblock delivers a blocked group's dead-lettered head again and lets the
// group go on; it returns the revived task.
func (s *Scheduler) Unblock(ctx context.Context, c Caller, client, group string) (TaskView, error) {
	r, err := s.onLeader(ctx, s.cfg.Store.GroupShard(client, group), func(p *partition, done func(result)) { p.unblock(c, client, group, done) })
	return r.view, err
}

// Skip lets a blocked group go on, leaving its head in the dead letter
// queue.
func (s *Scheduler) Skip(ctx context.Context, c Caller, client, group string) error {
	_, err := s.onLeader(ctx, s.cfg.Store.GroupShard(client, group), func(p *partition, done func(result)) { p.skip(c, client, group, done) })
	return err
}

// Replay delivers a dead letter again with fresh attempts; it returns the
// revived task.
func (s *Scheduler) Replay(ctx context.Context, c Caller, id uint64) (TaskView, error) {
	r, err := s.onLeader(ctx, store.ShardOf(id), func(p *partition, done func(result)) { p.replay(c, id, done) })
	return r.view, err
}

// DeleteDeadLetter drops a dead letter. A group's blocked head is skipped.
func (s *Scheduler) DeleteDeadLetter(ctx context.Context, c Caller, id uint64) error {
	_, err := s.onLeader(ctx, store.ShardOf(id), func(p *partition, done func(result)) { p.dropDeadLetter(c, id, done) })
	return err
}

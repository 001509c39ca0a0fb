package scheduler

import (
	"context"
	"sync/atomic"

	"github.com/boomerangd/boomerang/internal/store"
)

// MaxRegisterBatch bounds the tasks of one RegisterBatch call.
const MaxRegisterBatch = 1000

// RegisterResult is one task's answer in a batch registration.
type RegisterResult struct {
	View    TaskView
	Created bool // false when an idempotency key matched an earlier task
	Err     error
}

// RegisterBatch registers up to MaxRegisterBatch tasks, each on its own:
// a task that fails validation, or whose group is full, fails alone. The
// tasks of one shard are decided together and become durable in one log
// entry. Results are in the order of reqs; once RegisterBatch returns,
// every task without an error is durable.
func (s *Scheduler) RegisterBatch(ctx context.Context, reqs []RegisterRequest) ([]RegisterResult, error) {
	if len(reqs) > MaxRegisterBatch {
		return nil, invalid("tasks", "at most %d per batch, got %d", MaxRegisterBatch, len(reqs))
	}
	out := make([]RegisterResult, len(reqs))
	anywhere := make([]bool, len(reqs))
	sp := spreader{s: s}
	err := s.perShard(ctx, len(reqs), func(i int) (uint16, error) {
		if err := s.validateRegister(&reqs[i]); err != nil {
			return 0, err
		}
		shard, free := s.keyShard(&reqs[i])
		anywhere[i] = free
		if free {
			shard = sp.next(len(reqs[i].Payload))
		}
		return shard, nil
	}, func(p *partition, shard uint16, i int, done func()) {
		if anywhere[i] {
			shard = p.place(shard, len(reqs[i].Payload))
		}
		p.register(&reqs[i], shard, func(r result) {
			out[i] = RegisterResult{View: r.view, Created: r.created, Err: r.err}
			done()
		})
	}, func(i int, err error) { out[i].Err = err })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// spreader places the tasks of a batch that may go anywhere: the next
// shard in turn until each partition has one, then those shards in turn,
// so that the batch keeps every partition busy and costs one log entry a
// partition; a shard given maxPlaced payload bytes is replaced by the
// next in turn.
type spreader struct {
	s      *Scheduler
	shards []uint16
	bytes  []int // given to each shard
	n      int
}

func (sp *spreader) next(size int) uint16 {
	if len(sp.shards) < len(sp.s.parts) {
		sp.shards, sp.bytes = append(sp.shards, sp.s.anyShard()), append(sp.bytes, 0)
	}
	i := sp.n % len(sp.shards)
	sp.n++
	if sp.bytes[i] > 0 && sp.bytes[i]+size > maxPlaced {
		sp.shards[i], sp.bytes[i] = sp.s.anyShard(), 0
	}
	sp.bytes[i] += size
	return sp.shards[i]
}

// UpdateResult is one task's answer in a batch update.
type UpdateResult struct {
	View TaskView
	Err  error
}

// UpdateBatch makes up to MaxRegisterBatch updates, each on its own, as
// Update would: one that fails fails alone. The updates of one shard are
// decided together, in the order of reqs, and become durable in one log
// entry, so the tasks of one group change at once. Results are in the
// order of reqs; once UpdateBatch returns, every update without an error
// is durable.
func (s *Scheduler) UpdateBatch(ctx context.Context, c Caller, reqs []UpdateRequest) ([]UpdateResult, error) {
	if len(reqs) > MaxRegisterBatch {
		return nil, invalid("updates", "at most %d per batch, got %d", MaxRegisterBatch, len(reqs))
	}
	out := make([]UpdateResult, len(reqs))
	err := s.perShard(ctx, len(reqs), func(i int) (uint16, error) {
		if err := s.validateUpdate(&reqs[i]); err != nil {
			return 0, err
		}
		shard := store.ShardOf(reqs[i].ID)
		if int(shard) >= s.cfg.Store.Shards() {
			return 0, ErrNotFound // an id no task of this store has
		}
		return shard, nil
	}, func(p *partition, _ uint16, i int, done func()) {
		p.update(c, &reqs[i], func(r result) {
			out[i] = UpdateResult{View: r.view, Err: r.err}
			done()
		})
	}, func(i int, err error) { out[i].Err = err })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// perShard is a batch of n requests: shard places request i (or refuses
// it), op starts it in its partition's loop, the requests of one shard
// together in one turn, and fail records a refusal. It returns once every
// request is answered, or with the error that ended the wait.
func (s *Scheduler) perShard(ctx context.Context, n int, shard func(i int) (uint16, error), op func(p *partition, shard uint16, i int, done func()), fail func(i int, err error)) error {
	byShard := make(map[uint16][]int)
	w := newWaiter(n)
	for i := range n {
		sh, err := shard(i)
		if err != nil {
			fail(i, err)
			w.done()
			continue
		}
		byShard[sh] = append(byShard[sh], i)
	}
	var parts []*partition
	for sh, idx := range byShard {
		p := s.partitionOf(sh)
		parts = append(parts, p)
		err := p.inbox.request(func() {
			for _, i := range idx {
				if !p.leads(sh) {
					fail(i, &NotLeaderError{Shard: sh}) // refused before anything was done
					w.done()
					continue
				}
				op(p, sh, i, w.done)
			}
		})
		if err != nil {
			if e := s.err(); e != nil {
				err = e
			}
			for _, i := range idx {
				fail(i, err)
				w.done()
			}
		}
	}
	return s.await(ctx, w, parts)
}

// waiter counts answers still to come.
type waiter struct {
	left atomic.Int64
	all  chan struct{}
}

func newWaiter(n int) *waiter {
	w := &waiter{all: make(chan struct{})}
	w.left.Store(int64(n))
	if n == 0 {
		close(w.all)
	}
	return w
}

func (w *waiter) done() {
	if w.left.Add(-1) == 0 {
		close(w.all)
	}
}

// await waits for every answer, unless ctx ends or the partitions that
// owe them stop first.
func (s *Scheduler) await(ctx context.Context, w *waiter, parts []*partition) error {
	for _, p := range parts {
		select {
		case <-w.all:
			return nil
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-w.all:
		return nil
	default:
	}
	if e := s.err(); e != nil {
		return e
	}
	return ErrClosed
}

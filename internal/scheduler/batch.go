package scheduler

import (
	"context"
	"sync/atomic"
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
	byShard := make(map[uint16][]int)
	for i := range reqs {
		if err := s.validateRegister(&reqs[i]); err != nil {
			out[i].Err = err
			continue
		}
		shard := s.shardFor(&reqs[i])
		byShard[shard] = append(byShard[shard], i)
	}
	w := newWaiter(len(reqs))
	for i := range out {
		if out[i].Err != nil {
			w.done()
		}
	}
	var parts []*partition
	for shard, idx := range byShard {
		p := s.partitionOf(shard)
		parts = append(parts, p)
		err := p.inbox.request(func() {
			for _, i := range idx {
				if !p.leads(shard) {
					out[i].Err = &NotLeaderError{Shard: shard} // refused before anything was done
					w.done()
					continue
				}
				p.register(&reqs[i], shard, func(r result) {
					out[i] = RegisterResult{View: r.view, Created: r.created, Err: r.err}
					w.done()
				})
			}
		})
		if err != nil {
			if e := s.err(); e != nil {
				err = e
			}
			for _, i := range idx {
				out[i].Err = err
				w.done()
			}
		}
	}
	if err := s.await(ctx, w, parts); err != nil {
		return nil, err
	}
	return out, nil
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

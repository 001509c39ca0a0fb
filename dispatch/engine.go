package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrInvalidMode is returned by TrySubmitMode for a Mode that is not one of
// the constants of this package.
var ErrInvalidMode = errors.New("dispatch: invalid mode")

// Engine is a partitioned, per-family ordered dispatcher. It is safe for
// concurrent use. Create one with New and stop it with Close.
type Engine[T any] struct {
	cfg       Config[T]
	parts     []*partition[T]
	mask      uint64
	rr        atomic.Uint64
	loops     sync.WaitGroup
	workers   sync.WaitGroup
	closeOnce sync.Once
	closed    chan struct{} // closed when every loop and worker has exited
}

// New validates cfg, fills in defaults and starts the engine's goroutines:
// one loop and Config.Workers workers per partition.
func New[T any](cfg Config[T]) (*Engine[T], error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine[T]{cfg: cfg, mask: uint64(cfg.Partitions - 1), closed: make(chan struct{})}
	for i := range cfg.Partitions {
		e.parts = append(e.parts, newPartition(i, &e.cfg))
	}
	for _, p := range e.parts {
		e.loops.Add(1)
		go p.run(&e.loops)
		for range cfg.Workers {
			e.workers.Add(1)
			go p.worker(&e.workers)
		}
	}
	return e, nil
}

// TrySubmit submits v under key with mode NextOnError. It never blocks.
// It returns ErrBusy if the partition's ring is full, ErrGroupFull if the
// family has MaxPending tasks waiting, and ErrClosed after Close. On any
// error the task was not accepted.
func (e *Engine[T]) TrySubmit(key Key, v T) error {
	return e.TrySubmitMode(key, NextOnError, v)
}

// TrySubmitMode is TrySubmit with an explicit dispatch mode.
//
// Correlated keys with a gated mode go to the key's partition and queue
// behind the family's earlier tasks. Uncorrelated keys and Immediate tasks
// are spread round-robin over the partitions, trying each once before
// reporting ErrBusy.
func (e *Engine[T]) TrySubmitMode(key Key, mode Mode, v T) error {
	if mode > Immediate {
		return ErrInvalidMode
	}
	ent := entry[T]{key: key, value: v, mode: mode, slot: -1}
	if !ent.gated() {
		return e.submitUngated(&ent)
	}
	h := key.hash()
	p := e.parts[h&e.mask]
	if p.admit != nil {
		slot, err := p.admit.acquire(h)
		if err != nil {
			p.stats.rejectedGroupFull.Add(1)
			return err
		}
		ent.slot = slot
	}
	err := p.ring.push(ent)
	if err != nil {
		if ent.slot >= 0 {
			p.admit.release(ent.slot)
		}
		if err == ErrBusy {
			p.stats.rejectedBusy.Add(1)
		}
		return err
	}
	p.wake()
	return nil
}

func (e *Engine[T]) submitUngated(ent *entry[T]) error {
	start := e.rr.Add(1)
	for i := range uint64(len(e.parts)) {
		p := e.parts[(start+i)&e.mask]
		switch err := p.ring.push(*ent); err {
		case nil:
			p.wake()
			return nil
		case ErrClosed:
			return err
		}
	}
	e.parts[start&e.mask].stats.rejectedBusy.Add(1)
	return ErrBusy
}

// Unblock resumes a family halted by a BlockOnError failure: its failed
// task runs again first, then the rest in order. When it returns, that
// task has been handed to a worker if one was free. It returns
// ErrNotBlocked if the family is not blocked.
func (e *Engine[T]) Unblock(key Key) error { return e.control(key, ctrlUnblock) }

// Skip resumes a family halted by a BlockOnError failure, dropping the
// failed task. It returns ErrNotBlocked if the family is not blocked.
func (e *Engine[T]) Skip(key Key) error { return e.control(key, ctrlSkip) }

func (e *Engine[T]) control(key Key, kind ctrlKind) error {
	if !key.Correlated() {
		return ErrUncorrelated
	}
	return e.parts[key.hash()&e.mask].request(&ctrlOp{key: key, kind: kind})
}

// barrier returns once every partition has taken everything submitted
// before the call from its ring, applied every completion reported before
// it, and dispatched what it could. Tests use it to observe a quiet engine.
func (e *Engine[T]) barrier() error {
	for _, p := range e.parts {
		if err := p.request(&ctrlOp{kind: ctrlBarrier}); err != nil {
			return err
		}
	}
	return nil
}

// PartitionOf returns the partition a correlated key is routed to, or -1
// for an uncorrelated key.
func (e *Engine[T]) PartitionOf(key Key) int {
	if !key.Correlated() {
		return -1
	}
	return int(key.hash() & e.mask)
}

// Partitions returns the number of partitions.
func (e *Engine[T]) Partitions() int { return len(e.parts) }

// Stats returns a snapshot of every partition's counters. It is cheap and
// safe to call at any time, including after Close.
func (e *Engine[T]) Stats() []PartitionStats {
	out := make([]PartitionStats, len(e.parts))
	for i, p := range e.parts {
		out[i] = p.stats.snapshot(i)
	}
	return out
}

// Close stops intake (TrySubmit returns ErrClosed from now on), waits until
// every accepted task has run and completed, then stops the workers and
// returns. Families blocked by a BlockOnError failure do not hold Close up:
// their held and queued tasks go to Config.OnAbandon.
//
// If ctx ends first, Close abandons every task not yet started, stops the
// loops and returns ctx.Err(); completions reported later are ignored, and
// a worker still inside the handler exits when the handler returns.
// Close may be called more than once.
func (e *Engine[T]) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		for _, p := range e.parts {
			p.ring.close()
			p.closing.Store(true)
			p.wake()
		}
		go func() {
			e.loops.Wait()
			e.workers.Wait()
			close(e.closed)
		}()
	})
	select {
	case <-e.closed:
		return nil
	case <-ctx.Done():
		for _, p := range e.parts {
			p.abort.Store(true)
			p.wake()
		}
		e.loops.Wait()
		return ctx.Err()
	}
}

package dispatch

import (
	"strconv"
	"sync/atomic"
)

// Mode says how a task is gated and what a failure does to its family.
type Mode uint8

const (
	// NextOnError runs the family's tasks one at a time in order; a failed
	// task is dropped and the family moves on. It is the zero Mode.
	NextOnError Mode = iota
	// BlockOnError runs the family's tasks one at a time in order; a failed
	// task halts the family, holding the failed task as its head, until
	// Unblock (run the head again) or Skip (drop it).
	BlockOnError
	// Immediate skips family gating: the task is neither ordered nor
	// serialized with others of its key, exactly like an uncorrelated task.
	Immediate
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case NextOnError:
		return "NEXT_ON_ERROR"
	case BlockOnError:
		return "BLOCK_ON_ERROR"
	case Immediate:
		return "IMMEDIATE"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Result is what a Handler reports for a task.
type Result uint8

const (
	// Success completes the task.
	Success Result = iota
	// Failure completes the task as failed; the task's Mode decides what
	// happens to its family.
	Failure
	// Later means the handler has taken responsibility for calling
	// Task.Complete, from any goroutine, at some later time. The worker is
	// free at once; the family stays busy until Complete is called.
	Later
)

// Handler runs a task on a worker goroutine. It must not block on anything
// that waits for the engine itself to make progress on the same family.
type Handler[T any] func(t Task[T]) Result

// Task is the handler's view of one accepted task. It is a small value that
// may be copied and kept until Complete is called; after that it must not be
// used, because the engine reuses its storage.
type Task[T any] struct {
	t   *task[T]
	gen uint32
}

// Key returns the key the task was submitted with.
func (t Task[T]) Key() Key { return t.t.key }

// Value returns the value the task was submitted with.
func (t Task[T]) Value() T { return t.t.value }

// Mode returns the task's dispatch mode.
func (t Task[T]) Mode() Mode { return t.t.mode }

// Seq returns the task's sequence number within its family, counting from 1
// in acceptance order. An idle family is forgotten, so a family that comes
// back starts again at 1. Ungated tasks (uncorrelated or Immediate) have
// sequence 0.
func (t Task[T]) Seq() uint64 { return t.t.seq }

// Attempt returns how many times the handler has been given this task,
// counting this time: 1, then one more after each Unblock.
func (t Task[T]) Attempt() int { return int(t.t.attempt) }

// Partition returns the index of the partition that runs the task.
func (t Task[T]) Partition() int { return t.t.part.index }

// Complete finishes a task whose handler returned Later. r must be Success
// or Failure. Complete may be called from any goroutine, exactly once;
// calling it twice, or for a task whose handler did not return Later,
// panics.
func (t Task[T]) Complete(r Result) {
	if r == Later {
		panic("dispatch: Complete called with Later")
	}
	t.t.finish(t.gen, r)
}

// task is the engine's record of an accepted task. The partition loop owns
// it except between handing it to the handler and receiving its
// completion. Tasks are recycled through a per-partition free list.
type task[T any] struct {
	key     Key
	value   T
	mode    Mode
	result  Result
	attempt uint32
	seq     uint64
	slot    int32 // admission table slot, -1 when not counted
	fam     *family[T]
	part    *partition[T]
	next    *task[T] // link in the completion stack

	// state is gen<<1 while the handler owns the task and gen<<1|1 once it
	// has been completed; the generation changes on reuse so a stale Task
	// handle cannot complete a recycled task.
	state atomic.Uint32
}

// handle gives the task to a handler, returning the value it sees.
func (t *task[T]) handle() Task[T] {
	t.attempt++
	gen := t.state.Load() >> 1
	return Task[T]{t: t, gen: gen}
}

// finish records a result and hands the task back to its partition loop.
func (t *task[T]) finish(gen uint32, r Result) {
	if !t.state.CompareAndSwap(gen<<1, gen<<1|1) {
		panic("dispatch: task completed twice or after it was recycled")
	}
	if r != Success {
		r = Failure
	}
	t.result = r
	t.part.completed(t)
}

// rearm prepares a completed task to be handed to the handler again.
func (t *task[T]) rearm() {
	t.state.Store((t.state.Load()>>1 + 1) << 1)
}

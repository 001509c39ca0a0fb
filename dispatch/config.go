package dispatch

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
)

// Defaults for Config fields left at zero.
const (
	// DefaultRingSize is the per-partition submission ring capacity.
	DefaultRingSize = 4096
	// DefaultWorkers is the number of handler goroutines per partition.
	DefaultWorkers = 4
	// DefaultSlice is the number of tasks a family runs per turn.
	DefaultSlice = 8
	// DefaultMaxPending is the per-family bound on waiting tasks.
	DefaultMaxPending = 65536
	// DefaultMaxQueued is the per-partition bound on waiting tasks.
	DefaultMaxQueued = 1 << 17
	// DefaultHandoff is the per-partition number of started tasks that
	// may wait for a free worker.
	DefaultHandoff = 256
)

// Config configures an Engine. Zero fields take the defaults above.
type Config[T any] struct {
	// Handler runs every task. Required.
	Handler Handler[T]

	// Partitions is the number of partitions, a power of two. Each has
	// its own ring, loop goroutine and workers. Default: GOMAXPROCS
	// rounded up to a power of two.
	Partitions int

	// RingSize is each partition's submission ring capacity, a power of
	// two. A full ring makes TrySubmit return ErrBusy. Default 4096.
	RingSize int

	// Workers is the number of goroutines per partition that run the
	// handler. Default 4.
	Workers int

	// Handoff is how many started tasks per partition may wait for a free
	// worker. Larger values let the loop hand work over in bigger batches;
	// smaller values keep the ready queue, and so fairness, in charge.
	// Default 256.
	Handoff int

	// Slice is the number of tasks a family may run in one turn before it
	// goes to the back of the ready queue. Default 8.
	Slice int

	// MaxPending bounds the tasks of one family that are accepted but not
	// yet started; TrySubmit returns ErrGroupFull beyond it. -1 disables
	// the bound. Default 65536; at most 16777215.
	//
	// The bound is counted on the producer's side in a table of 16 slots
	// per ring slot. In two rare cases it lets a task through uncounted
	// (never a false rejection): when eight neighbouring slots are all in
	// use by other families, and when two producers open the same family
	// at the same moment that a neighbouring family goes idle.
	MaxPending int

	// MaxQueued bounds the tasks of one partition that are accepted but
	// not yet started. When it is reached the loop stops taking from the
	// ring, the ring fills, and TrySubmit returns ErrBusy: memory stays
	// bounded however many families there are. Default 131072.
	MaxQueued int

	// OnPanic, if set, is called on the worker goroutine when the handler
	// panics. The task then counts as failed.
	OnPanic func(t Task[T], recovered any)

	// OnAbandon, if set, receives the tasks that Close leaves unrun: those
	// held by a blocked family and queued behind it, and, if Close's
	// context expires, every task not yet started. Each partition calls it
	// from its own goroutine, so calls may run concurrently; within a
	// family the tasks come in order.
	OnAbandon func(key Key, value T)

	// beforeSleep, set only by tests, runs on the loop goroutine in the
	// window between finding no work and announcing sleep: the window a
	// lost wakeup would hide in.
	beforeSleep func(partition int)
}

func (c *Config[T]) ensureDefaults() {
	if c.Partitions == 0 {
		c.Partitions = 1 << bits.Len(uint(runtime.GOMAXPROCS(0)-1))
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Handoff == 0 {
		c.Handoff = DefaultHandoff
	}
	if c.MaxQueued == 0 {
		c.MaxQueued = DefaultMaxQueued
	}
	if c.Slice == 0 {
		c.Slice = DefaultSlice
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
}

func (c *Config[T]) validate() error {
	switch {
	case c.Handler == nil:
		return errors.New("dispatch: Config.Handler is required")
	case !powerOfTwo(c.Partitions):
		return fmt.Errorf("dispatch: Config.Partitions must be a power of two, got %d", c.Partitions)
	case !powerOfTwo(c.RingSize) || c.RingSize < 2:
		return fmt.Errorf("dispatch: Config.RingSize must be a power of two >= 2, got %d", c.RingSize)
	case c.Workers < 1:
		return fmt.Errorf("dispatch: Config.Workers must be positive, got %d", c.Workers)
	case c.Handoff < 1:
		return fmt.Errorf("dispatch: Config.Handoff must be positive, got %d", c.Handoff)
	case c.MaxQueued < 1:
		return fmt.Errorf("dispatch: Config.MaxQueued must be positive, got %d", c.MaxQueued)
	case c.Slice < 1:
		return fmt.Errorf("dispatch: Config.Slice must be positive, got %d", c.Slice)
	case c.MaxPending < -1 || c.MaxPending > maxPending:
		return fmt.Errorf("dispatch: Config.MaxPending must be -1 or between 1 and %d, got %d", maxPending, c.MaxPending)
	}
	return nil
}

func powerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }

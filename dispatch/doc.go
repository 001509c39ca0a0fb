// Package dispatch is an in-memory, partitioned dispatcher that runs tasks
// in order, one at a time, per family (a customer, an account, a group key)
// while different families run in parallel.
//
// It is the engine under Boomerang's scheduler and its Mini-OMS demo, and
// it is usable on its own:
//
//	eng, err := dispatch.New(dispatch.Config[Order]{
//		Handler: func(t dispatch.Task[Order]) dispatch.Result {
//			process(t.Value())
//			return dispatch.Success
//		},
//	})
//	...
//	err = eng.TrySubmit(dispatch.IntKey(accountID), order)
//	...
//	err = eng.Close(ctx)
//
// # Guarantees
//
//   - FIFO per family: the tasks of one correlated key start in the order
//     they were accepted.
//   - Single in flight per family: a family's next task starts only after
//     the previous one has completed (which for an asynchronous handler
//     means after Task.Complete).
//   - Every accepted task runs exactly once (plus once more per Unblock),
//     unless Close gives up on it, in which case it goes to OnAbandon.
//   - Bounded resources: a fixed number of partitions and workers, bounded
//     rings, a bound per family (MaxPending) and per partition (MaxQueued).
//     Overload is refused at once with ErrBusy or ErrGroupFull.
//
// Uncorrelated tasks (IntKey(n) with n <= 0, StringKey("")) and tasks
// submitted with mode Immediate have no family: they are spread
// round-robin over all partitions and run as soon as a worker is free.
//
// # Architecture
//
// Each partition has a bounded multi-producer ring, one loop goroutine and
// a pool of worker goroutines:
//
//	TrySubmit ──► ring ──► loop ──► handoff ──► workers ──► handler
//	                        ▲                      │
//	                        └──── completions ◄────┘
//
// A key is routed to partition mix64(hash(key)) & (Partitions-1). The loop
// is the only goroutine that reads or writes family state (busy flag,
// pending queue, blocked head) and the ready queue of runnable families,
// so there is no lock on the hot path, and the lost-wakeup race of designs
// where workers release a family themselves cannot happen: a worker only
// pushes the finished task onto the loop's completion stack, and the loop
// decides what runs next. The loop takes work in batches from the ring and
// the completion stack and sleeps only after announcing it and checking
// once more for work.
//
// The per-family bound is counted on the producer's side, in a small
// lock-free table (see Config.MaxPending), so TrySubmit can answer
// ErrGroupFull itself without waiting for the loop.
//
// # Fairness
//
// Runnable families wait in a FIFO ready queue. A family keeps its place
// for up to Config.Slice tasks, then goes to the back, so a hot family
// with thousands of waiting tasks delays others by at most one slice.
//
// # Failure and dispatch modes
//
// A handler returns Success, Failure, or Later (it will call
// Task.Complete from any goroutine; the family stays busy meanwhile, which
// is how network deliveries and retry backoffs keep their place). What a
// failure does depends on the task's Mode: NextOnError drops the task and
// moves on; BlockOnError halts the family, holding the failed task, until
// Unblock runs it again or Skip drops it; Immediate tasks are not gated.
// A panicking handler counts as a failure.
//
// # Memory
//
// Families are created on first use and forgotten when they have nothing
// queued, running or blocked, so memory follows the number of active keys,
// not the key space. Task records are recycled per partition.
//
// # Shutdown
//
// Close stops intake, lets every accepted task run, then stops the
// goroutines. Tasks that cannot run because their family is blocked, and
// everything not yet started if Close's context ends first, are handed to
// Config.OnAbandon.
//
// # Observability
//
// Stats returns per-partition counters (submitted, rejected, dispatched,
// completed, failed, queued behind a busy family, deepest queue, active and
// blocked families). The engine never logs.
package dispatch

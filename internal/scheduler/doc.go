// Package scheduler is the task lifecycle of the Boomerang server: tasks
// due now, later or every N ms are stored durably before they are
// acknowledged, fired in group order, delivered through a Deliverer,
// retried, dead-lettered, and rebuilt exactly after a crash or a power
// loss.
//
// # Partitions and shards
//
// Keys in the store carry one of store.Shards virtual shards. A grouped
// task lives on store.GroupShard(client, group), so a group always lives on
// one shard; an ungrouped task with an idempotency key on the shard of its
// key, so a repeat lands in the same place. Other ungrouped tasks go
// anywhere this node leads: a call picks the next led shard in turn, and
// its partition keeps such tasks on one shard until it has been given
// maxPlaced bytes (partition.place), then moves on to the candidate of
// the call at hand, so that tasks that come one after the other share a
// log entry and make long runs of neighbouring keys in the state; a
// batch's such tasks go to one shard a partition.
// Task ids carry their shard. Shard s belongs to partition
// s & (Partitions-1), and each partition is one loop goroutine that alone
// decides every change to its shards' tasks and owns their timers and
// running groups.
//
// # Decide, replicate, apply, acknowledge
//
// A request reaches its partition's inbox. The loop validates it against
// its state, decides everything the change needs (id, sequence, times),
// and records the decision as a command of typed mutations for its shard
// (store.Command). At the end of a loop turn each shard's commands are
// proposed as one entry of the shard's replicated log (package replica,
// docs/replication.md). Once the entry is committed (by the node's synced
// write alone, or by a quorum's in a cluster) every replica applies it to
// its state in one unsynced batch with the shard's applied index, and on
// the leader the decisions' continuations run: only then do callers hear
// of their changes. Deciding may only suppress work before it is applied
// (a cancel removes the task's timer at once), never start any: no task
// is delivered that a power loss could make unregistered.
//
// Every change goes through the log, the scheduler's own (delivery
// outcomes, retries, dead-lettering, sweeps) as much as callers': a
// group's next task starts only once its predecessor's outcome is
// committed, so a power loss or a failover can repeat the delivery under
// way but never undo an outcome that let a group go on.
//
// A record that cannot be stored (one that does not encode) fails only
// the operation it belongs to, never the entry: text from receivers is
// made safe first (package sanitize), and names from clients are
// validated. A storage failure stops the scheduler: every waiting caller
// gets the error, Err reports it, Stats says Stopped, and the store holds
// exactly what was acknowledged.
//
// Ids never repeat: a shard's ids count up from the highest its state
// holds, which a new leader takes up once it has applied everything
// committed before its term; an id a deposed leader issued in an entry
// that was never committed was never acknowledged either.
//
// # Group order
//
// An ordered group (grouped tasks in mode NEXT_ON_ERROR or
// BLOCK_ON_ERROR) runs its tasks one at a time in (due, seq) order, where
// seq is the acceptance sequence: the task's id when it was registered,
// kept when a blocked head is unblocked, so that it keeps its place. The
// order lives in the store, in the group order index; the loop keeps
// only a groupRun per group with work: idle, waiting for a delivery slot,
// running its head (delivering, settling or retrying), or blocked. An
// idle group with a due head starts it, reading the head from the index;
// a task registered or moved earlier than its siblings, even into the
// past, is simply first in the index. Firing, recovery and the gate all
// use this one order, so it is the same before and after a restart.
//
// # Firing and memory
//
// The timing wheel runs on the partition's clock, the system clock that
// never goes back (see wall): it holds a timer per ungrouped task due
// before the loaded horizon (now + Config.Horizon, advanced every
// Config.LoadInterval from the store's due index), and one wake per
// ordered group, at its earliest due task. Due work waits in the ready
// queue, as a task id or a group, for one of the partition's share of
// Config.MaxDelivering delivery slots; a task's record, payload included,
// is read when its attempt starts. A backlog of a million due tasks
// therefore costs a few bytes each, and a stuck group holds only its head.
// A turn of the loop starts what is due before it handles its inbox
// (requests, committed entries to apply, delivery outcomes), and again
// after: what was due when a turn began does not wait for a long inbox.
//
// # Outcomes
//
//   - Success: a one-shot task is deleted; a recurring task moves to its
//     next occurrence, computed from its previous due time (no drift). If
//     that is already past, as after downtime, it skips to the first
//     occurrence after now, so missed occurrences fire once, not in a burst.
//   - Failure with attempts left: the attempt count, last error and next
//     attempt time are stored. A group's head keeps holding its group; any
//     other task waits for its next attempt like a scheduled one.
//   - Failure with no attempts left: the occurrence is moved to the dead
//     letter queue. A one-shot task is deleted; a recurring task goes on to
//     its next occurrence. With BLOCK_ON_ERROR the group is blocked with
//     the dead letter as its head until Unblock (deliver it again in its
//     place, then continue) or Skip (leave it in the dead letter queue and
//     continue).
//   - A local refusal (ErrNotAttempted: a full dispatch pool, shutting
//     down) is no outcome: nothing is written, no attempt counted, and the
//     task is tried again after Config.RefusalDelay.
//
// # Limits
//
// A group holds at most Config.GroupLimit tasks (ErrGroupFull beyond).
// A group's record exists while it has tasks or is blocked. A client
// keeps at most its maximum of dead letters: the sweeper deletes the
// oldest as soon as a client goes over, reading only the dead letter
// index, and enforces retention every Config.SweepInterval. Idempotency
// keys are kept for Config.IdempotencyRetention after their registration,
// at most Config.MaxIdempotencyKeys of them.
//
// # Cancel and update
//
// A scheduled, due or retrying task can be cancelled or updated; a task
// whose delivery attempt is under way answers ErrInFlight, because the
// attempt has already started. Cancel and fire are ordered by the same
// loop, so a task whose cancellation was acknowledged never fires
// afterwards. A new due time starts a new occurrence: a retrying head
// gives up its place, and its group looks at its order again.
//
// # Cron, replace keys and rate limits
//
// A task may repeat on a cron schedule in a time zone instead of an
// interval (cron.go, package cron); a registration with a replace key
// replaces the waiting task with that key, optionally debounced
// (debounce.go); an ordered group may be rate limited (ratelimit.go).
// Like every other time, the next cron occurrence, a debounced due time
// and an attempt's start time are decided by the leader and carried in
// the records; a rate-limited group waits, in order, until its limit
// lets its head start.
//
// # Recovery
//
// On start, the replica node replays each shard's log after the state's
// applied index. A partition that starts to lead a shard (at start, or
// after a failover) rebuilds the shard's runtime from its state: the
// highest id, blocked groups (before anything else of theirs can run),
// idempotency key counts, and from the due index up to the horizon the
// ungrouped tasks' timers (overdue ones straight into the ready queue)
// and one wake per group.
// Tasks that were under way at the crash are due, so they fire again
// (at-least-once); a retry resumes at its stored next attempt time, and a
// group's order is read from the store as before.
package scheduler

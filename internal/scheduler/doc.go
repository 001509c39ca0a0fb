// Package scheduler is the task lifecycle of the Boomerang server: tasks
// due now, later or every N ms are stored durably before they are
// acknowledged, held in a timing wheel while imminent and on disk while
// far away, fired in group order through the dispatch engine's group gate
// to a Deliverer, retried, dead-lettered, and rebuilt exactly after a
// crash.
//
// # Partitions and shards
//
// Keys in the store carry one of store.Shards virtual shards. A grouped
// task lives on store.GroupShard(client, group), so a group always lives on
// one shard; an ungrouped task with an idempotency key on the shard of its
// key, so a repeat lands in the same place; other ungrouped tasks are
// spread round-robin. Task ids carry their shard. Shard s belongs to
// partition s & (Partitions-1), and each partition is one loop goroutine
// that alone decides every change to its shards' tasks, owns their part of
// the timing wheel, and assigns ids and group sequence numbers. Within a
// shard ids grow in acceptance order, so within a group the order (due,
// id) is the order (due, sequence).
//
// # Journal, then apply, then acknowledge
//
// A request reaches its partition's inbox. The loop validates it against
// its state, decides everything the change needs (id, sequence, times),
// and adds the records to the partition's open journal batch. A journal
// goroutine per partition writes batches to the store's log in order, the
// next one while the last one syncs (at most two at a time), and reports
// each back to the loop once it is synced; meanwhile the loop fills the
// next batch, so under load one fsync covers many requests, and the store
// shares fsyncs between partitions too. When
// a batch is committed the loop applies it (wheel inserts, group gate
// releases) and only then answers the callers. Deciding may only suppress
// work before it is committed (a cancel removes the task's timer at once),
// never start any: no task is delivered that a crash could make
// unregistered. If a commit
// fails the scheduler stops and every waiting caller gets the error; the
// store holds exactly the acknowledged state.
//
// Only batches that answer a caller are synced. The scheduler's own
// changes (delivery outcomes, retries, dead-lettering, the sweep) are
// committed without an fsync: the log is sequential, so the next synced
// batch covers them, and a crash that loses some only repeats deliveries,
// which at-least-once allows. Deliveries never wait for the disk. What
// survives a crash is always a prefix of the commits, so the state after
// recovery is one the scheduler passed through: a task whose successful
// delivery was lost is delivered again, before the rest of its group.
//
// # Tiers
//
// Only tasks due before the loaded horizon (now + Config.Horizon, advanced
// by a look-ahead loader every Config.LoadInterval) are in the wheel; the
// rest live only in the store's due index. Update and cancel work in
// either tier.
//
// # Firing and the group gate
//
// When the wheel fires a batch, the loop reads the fired tasks' records
// with one store iterator, orders them by (due, id) and submits each task
// of a group to the dispatch engine keyed by its group, which keeps a
// group's tasks FIFO and one at a time. The engine's handler only posts
// "start" back to the loop; a task is "queued" from firing until then.
// Immediate and ungrouped tasks have nothing to wait for and start at
// once, without the engine. At start the loop reads the
// task's current record: if it was cancelled or moved into the future
// meanwhile, the group gate is released without a delivery; if a retry is
// pending it waits for it; otherwise the task is "delivering" and goes to
// the Deliverer, which reports the outcome from any goroutine.
//
// # Outcomes
//
//   - Success: a one-shot task is deleted; a recurring task moves to its
//     next occurrence, computed from its previous due time (no drift). If
//     that is already past, as after downtime, it skips to the first
//     occurrence after now, so missed occurrences fire once, not in a burst.
//   - Failure with attempts left: the attempt count, last error and next
//     attempt time are stored and a retry timer is set; the group stays
//     gated, so a retrying task holds its place.
//   - Failure with no attempts left: the occurrence is moved to the dead
//     letter queue. A one-shot task is deleted; a recurring task goes on to
//     its next occurrence. With BLOCK_ON_ERROR the group is blocked with
//     the dead letter as its head until Unblock (deliver it again, then
//     continue) or Skip (leave it in the dead letter queue and continue).
//
// The group gate is released only after the outcome is committed, so the
// next task of a group never starts before its predecessor's result is in
// the log. The commit is not synced (see above): a crash may lose it, and
// then the predecessor is delivered again first.
//
// # Cancel and update
//
// A queued or retrying task can be cancelled or updated; a task whose
// delivery attempt is under way answers ErrInFlight, because the attempt
// has already started. Cancel and fire are ordered by the same loop, so a
// task whose cancellation was acknowledged never fires afterwards.
//
// # Recovery
//
// Open rebuilds each partition from the store: shard id counters, blocked
// groups (their dead-lettered heads block the gate again before anything
// else of the group is submitted), and the wheel from the due index up to
// the horizon. Tasks that were queued, delivering or retrying at the crash
// are due, so they fire again: at-least-once, a retry resumes at its
// stored next attempt time, and the group gate restores the order.
package scheduler

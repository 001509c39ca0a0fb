// Package outbox dispatches the rows of a PostgreSQL table (the
// transactional outbox pattern) as Boomerang tasks: each row a task, in
// order within its group, one row of a group delivered at a time, run by
// one primary node per source. docs/outbox.md is the user's guide; this
// is the contract.
//
//	ob, err := outbox.New(cfgs, outbox.Options{Node: node, Logger: log})
//	srv, err := server.New(server.Config{..., OnFinished: ob.Finished})
//	err = srv.Start(ctx)
//	err = ob.Start(ctx, srv.Scheduler(), srv.Registerer())
//	...
//	err = srv.Stop(ctx) // deliveries end; their outcomes reach ob
//	err = ob.Stop(ctx)  // the outcomes are written to the rows
//
// # A row's life
//
//	PENDING ──poll──► (held task registered) ──commit──► QUEUED ──final outcome──► DONE (or deleted) / ERROR
//
// A poll runs in one transaction that first reads the lease row FOR KEY
// SHARE (the fence, below). It finds the rows that may go, locks them
// FOR UPDATE SKIP LOCKED, registers them in one batch, each as a task of
// its target's client, in its group, with the row id in the task's
// idempotency key ("outbox:<source>:<after>:<id>", see keyPrefix), and
// marks them QUEUED with the task id and this node as owner, then commits. Rows that can never become tasks
// (a payload over the limit, an unknown target or mode, an invalid
// group) are marked ERROR with the reason in the same transaction; the
// source goes on. Registration failures that may pass (the scheduler
// busy or stopping) leave the row PENDING for the next poll.
//
// Tasks are registered held: due five years from now. Only after the
// poll has committed is a task released (its due time set to its
// registration time, which has passed). A
// task therefore never fires before its row records it, which is what
// makes a crash between the scheduler's acknowledgement and the commit
// harmless: the idempotency key alone would not do, since the scheduler
// forgets it after a retention period and since another node would
// register the row in its own store. Held tasks whose poll did not
// commit are found by their due time and key and cancelled before a node
// dispatches (cleanupHeld), or released when their row says QUEUED.
//
// The scheduler reports each final outcome once durable
// (scheduler.Config.OnFinished → Outbox.Finished, which only queues it);
// a writer marks the row DONE (or deletes it, Config.DeleteDone) or
// ERROR with the last error and the attempt count, in batches. The
// update matches the row's id, its task and its owner while QUEUED, so
// it is idempotent and cannot touch a row that has since moved on.
//
// # Order
//
// Rows of a group go in (sequence, created_at, id) order; rows with no
// group (NULL or empty) and IMMEDIATE rows are free: no order, no gate.
// Boomerang delivers a group's tasks one at a time in (due, seq) order,
// the next once the previous one's outcome is durable; the outbox
// builds on that and hands it a group's rows ahead of their turn, up to
// Config.GroupDepth QUEUED at once. A poll reads each group's first
// gated rows (PENDING or QUEUED) in order and takes the PENDING rows that
// follow the rows this node has QUEUED (a chain), each only while:
//
//   - the group has no BLOCK_ON_ERROR row in ERROR (such a group waits
//     until the row is replayed: set back to PENDING, skipped: set DONE,
//     or deleted in the table);
//   - no row before it in the group is QUEUED by another node (its task
//     is in that node's store, outside this one's order) or PENDING and
//     not taken;
//   - the row before it is not BLOCK_ON_ERROR: nothing is registered
//     behind such a row, so when it fails nothing behind it has been
//     handed over. BLOCK_ON_ERROR rows are registered NEXT_ON_ERROR, so
//     that the table alone decides: nothing needs unblocking in Boomerang;
//   - the guard (below) has let it through.
//
// The tasks of a group must run in their rows' order, whatever the order
// of the scheduler's work. Three rules see to it. The poll registers its
// rows in one batch in chain order, and the scheduler numbers (seq) the
// tasks of one group in the order of the batch; a chain is cut at its
// first row that does not become a new task in that batch (an error, or
// a key whose task finished, which is registered again, last), and the
// held tasks of rows behind the cut are cancelled before the commit.
// Tasks are released with their registration time as due time, which the
// scheduler keeps monotonic per shard, so released tasks of a group sort
// by registration whoever releases them and whenever, and a release
// repeated by recovery changes nothing. A group's tasks are released
// together, and with those of every other group of the poll (releaseRuns:
// one UpdateBatch, which the scheduler applies in one log entry per
// shard, so a group's tasks change at once), or one after the other if
// that fails, never one while an earlier one is still held, and a group
// stays busy for later polls from the plan that takes its rows until
// their releases have ended; recovery releases each group's held tasks
// in the order of their ids (releaseInOrder).
//
// Transactions can commit out of order: one that took sequence 5 may
// commit after one that took 6. A poll must then not take 6 for the
// 6 while 5 is still invisible. The guard (guard.go) holds a row
// back until every transaction that was writing to the table when the
// row was first seen has ended, judged before the snapshot that
// reads the group: writers are read from pg_locks (RowExclusiveLock on
// the table, by virtual transaction id) at the start of each poll. This
// is exact under one condition: a row's place in the order is taken
// while its transaction writes the table, that is by the INSERT itself
// (a column default, the trigger `outbox init` installs, which numbers
// rows that come without a sequence, or an expression of the INSERT) —
// true of sequences drawn in the INSERT and of per-aggregate versions
// checked under the aggregate's lock, not of a number drawn in an
// earlier statement of a transaction that had not yet written the table.
// A long transaction that writes the outbox table holds every group back
// until it ends; one that writes only other tables holds back nothing.
// Each poll notes every PENDING row it reads and does not take, so that
// in a steady flow a row has been seen, and let through, by the time it
// is due.
//
// # Polling
//
// The primary polls when woken: by a notification (the trigger of
// `outbox init` notifies NotifyChannel on every PENDING row; a
// dedicated connection LISTENs), by finished rows (below), or by
// Config.PollInterval. A full poll visits up to BatchSize groups from a
// cursor, one index scan of at most 2*GroupDepth - refillAt + 1 rows
// each (the rows that may go and those the group's next refill takes,
// seen ahead for the guard), so a table of many groups is covered over
// several polls. A group is refilled, polled directly, once a finished
// row leaves at most refillAt (a quarter of GroupDepth) of its rows
// QUEUED by this node (groupLoads counts them), or when its releases end
// with so few: one
// poll then tops it up by several rows, with one index scan, one lock
// and one release for the lot, rather than one poll per finished row;
// Boomerang's queue of the group never runs dry meanwhile. Busy groups
// are not read. A poll takes at most BatchSize rows, and at most
// MaxInFlight rows are QUEUED by a node: no poll starts while they are.
//
// # One primary
//
// A node campaigns for each source with its Elector: standalone, the
// lease row (elector.go); in a cluster, the cluster's election, which
// writes its term to the lease row. Every write of a poll, and stale
// recovery, runs in a transaction that holds the lease row FOR KEY SHARE
// and checks that it names this node and term (fencedTx): a standby's
// takeover locks the row FOR UPDATE, so it waits for those transactions, and after it the deposed
// primary's writes fail with ErrDeposed. A standby takes over at most
// about LeaseTTL after the primary stops renewing.
//
// # Recovery
//
// Rows QUEUED by a node hold tasks in that node's store, so only that
// node can finish them; a standby taking over leaves them to it, and
// their groups wait. On start, and every StaleAfter/2, a node settles its
// own QUEUED rows against its store (reconcile): a task still there is
// in flight (released if still held); a task gone reached its final
// outcome while the row did not learn it (the process died after the
// outcome was durable and before the row was updated, or Stop gave up):
// with a dead letter the row becomes ERROR with its error, without one
// DONE. (A task cancelled by hand through the API counts as done; the
// outbox's tasks are better left alone.) Every node writes a heartbeat
// to the node table; the primary takes rows QUEUED longer than StaleAfter
// by a node not seen for as long back to PENDING (stale recovery, fenced
// by its term), presuming that node and its store lost. Should it come
// back with its store after all, it delivers those tasks too: at least
// once. Node names must therefore stay with their data directories.
package outbox

// Package history checks what a load generator and its receivers saw of a
// cluster against the guarantees the cluster gives. It knows nothing of
// how the history was made: a test records operations (what it asked,
// when, and what was answered) and deliveries (what reached a receiver,
// when, with which headers), and Check returns every violation it finds.
//
// # What is checked
//
// Time is the recorder's wall clock in Unix milliseconds; operations and
// deliveries are recorded on one machine, so they share one clock.
//
//   - Unique ids: no task id is acknowledged for two registrations (two
//     idempotency keys), and one key is never acknowledged with two ids.
//   - Nothing lost: every acknowledged registration is delivered at least
//     once, unless a cancel of it was attempted (an acknowledged cancel
//     removes it; a cancel whose outcome is unknown may have).
//   - Nothing unknown: every delivery names a task some registration
//     asked for (acknowledged or not: an unanswered one may have taken
//     effect), by the payload, which is the registration's key.
//   - Nothing early: a delivery arrives no earlier than its fire time, and
//     its fire time is a due time the task was asked to have, by its
//     registration or by an update.
//   - No delivery after an acknowledged cancel: a delivery of a task that
//     arrives after the task's cancel was acknowledged is a violation
//     unless its term is lower than the highest term any delivery of the
//     task's shard carried in the whole history. The exception is exactly
//     at-least-once across a failover: a deposed leader's attempt started
//     before it lost the shard arrives with its old term, which the new
//     leader, the one that acknowledged the cancel, has passed (and that
//     the receiver's fence drops). The leader that acknowledged the cancel
//     delivers with the shard's newest term, and never may.
//   - Group order and single in flight, on the deliveries a receiver
//     fencing by term admits (a delivery whose term is lower than the
//     highest its fence key has seen is stale and dropped): within a
//     group, tasks are first delivered in the order of their acceptance
//     sequence, which the generator makes the (due, seq) order; no task is
//     first delivered after a later one was; and no two tasks of a group
//     are being handled by receivers at the same time.
package history

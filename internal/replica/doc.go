// Package replica replicates each shard's log with Raft
// (go.etcd.io/raft/v3): a Node hosts one Raft group per shard and drives
// all of them from one loop, the shape of etcd's raftexample.
//
// # The loop
//
// Each turn the loop hands the proposals and messages that arrived to
// their groups, ticks them if a tick is due, then collects the Ready of
// every group that has one and:
//
//  1. persists every group's new entries and hard state in one synced
//     store batch: one fsync a turn however many shards had work (group
//     commit across shards);
//  2. sends the groups' messages through the Transport;
//  3. gives each group's committed entries to the StateMachine, in log
//     order, and tells it when this node leads a shard: once the entries
//     committed before its term are given, so that the state machine acts
//     as leader only on state that includes everything committed before;
//  4. advances every group.
//
// A standalone node runs every shard as a group of one voter, through
// exactly this path.
//
// # State and the log
//
// The state machine writes its state without syncing it, with the
// applied index in the same batch (see store.Batch.SetApplied), and
// reports what it wrote with Applied. The log is the durable copy: a
// synced batch of the loop makes every earlier write durable (the store's
// write-ahead log is sequential), so the state it covered is durable from
// then on, and the log before it can go. On restart each group reloads
// its log and hard state, and the state machine replays the entries
// after its applied index.
//
// # New groups
//
// A group with no persisted state starts from an initial snapshot at
// index 1 whose configuration is Config.Peers, the same on every node, so
// a new cluster needs no configuration entries.
package replica

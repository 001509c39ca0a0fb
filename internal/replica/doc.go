// Package replica replicates each shard's log with Raft
// (go.etcd.io/raft/v3): a Node hosts one Raft group per shard and drives
// all of them from one loop, the shape of etcd's raftexample.
//
// # The loop
//
// Each turn the loop hands the proposals and messages that arrived to
// their groups (the proposals to one shard joined into one entry when
// Config.Mergeable allows it), ticks them if a tick is due, then collects
// the Ready of every group that has one and:
//
//  1. sends the messages that do not vouch for this node's storage (a
//     leader's appends and heartbeats, vote requests), so that followers
//     write a leader's entries while it does (Raft thesis, 10.2.1; Raft
//     counts the leader's own copy only once it is written);
//  2. persists every group's new entries, and its hard state if its term
//     or vote changed, in one synced store batch: one fsync a turn however
//     many shards had work (group commit across shards). A hard state
//     that only commits more is not written: Raft keeps the commit index
//     in volatile state, and a restart takes the applied index as
//     committed;
//  3. sends the other messages, acknowledgements of appends and votes,
//     which must not be seen before what they vouch for is durable;
//  4. gives each group's committed entries to the StateMachine, in log
//     order, and tells it when this node leads a shard: once the entries
//     committed before its term are given, so that the state machine acts
//     as leader only on state that includes everything committed before;
//  5. advances every group.
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
// then on, and the log before it can go: the loop single-deletes each
// entry (every entry is written once since its last deletion), which
// vanishes with its write in a flush, instead of a range deletion, which
// every iterator made while it sits in the memtable would sort again. On
// restart each group reloads its log and hard state, and the state
// machine replays the entries after its applied index.
//
// # The TCP transport
//
// Nodes carry Raft messages over TCP (TCPTransport), TLS when configured
// (mutual when the configuration verifies client certificates). Each
// node listens on its cluster address and dials one stream to each
// peer; a stream carries messages one way, from the node that dialed.
// Frames are varint-length-delimited protobuf (replicapb): a Hello, a
// HelloReply, then one Frame per message, holding the shard, the
// marshaled raftpb.Message and the configuration indexes of both ends'
// copies (see Envelope).
//
// The handshake carries the wire version, the cluster name and the ids
// of both ends. The accepting node refuses, with its reason in the reply
// and in both nodes' logs, a stream of another version, from another
// cluster, meant for another node, or claiming its own id; later, it
// closes a stream that carries a message from or to another node than the
// handshake said.
//
// Send never blocks: it queues each message on its peer's stream, whose
// queue is bounded in bytes (TCPConfig.QueueBytes), and drops it when the
// stream is down or the queue full. Raft resends what matters; the node
// is told with Node.Unreachable, so that a leader probes the peer
// instead of streaming entries into the void. One goroutine per stream
// writes whatever has queued in one write, under a write deadline: a
// peer that stops reading loses its own messages and holds up no one
// else. A broken stream is redialed with exponential backoff and jitter;
// the messages queued on it are dropped. A message larger than
// TCPConfig.MaxFrameSize (64 MiB by default, room for snapshots) is
// dropped with a log line, by the sender or by a receiver with a lower
// limit, and the stream goes on.
//
// SetPeers changes the peers' addresses at runtime: streams to removed
// or moved peers close, new ones are dialed. Stats counts each peer's
// messages and bytes both ways and the messages dropped.
//
// # The system group
//
// With Config.System set, the entries of the system group
// (store.SystemShard: registered clients and sessions), when the node
// hosts it, go to Config.System instead of Config.StateMachine. Its followers forward
// their proposals to its leader; the task shards' do not (see system.go).
//
// # Copies of a replica
//
// Raft names a replica by its node, but a node may drop its copy of a
// shard and be given a new, empty one later. Messages carry the index of
// the configuration change that added each end's copy (Envelope), and a
// node drops an acknowledgement from a copy added before the change that
// last added its sender here: it describes a log that is gone.
//
// # New groups
//
// A group with no persisted state starts from an initial snapshot at
// index 1 whose configuration is Config.Peers, the same on every node, so
// a new cluster needs no configuration entries.
package replica

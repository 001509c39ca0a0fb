package replica

import "go.etcd.io/raft/v3/raftpb"

// Envelope is a Raft message of one shard's group.
//
// Raft names a replica by its node, but a node may drop its copy of a
// shard's replica and be given a new, empty one later: the two copies
// differ by the index of the configuration change that added each to the
// group. ToAdded is that index for the receiver's copy as the sender
// knows it (0: not known); FromAdded is the sender's own, as it learned
// it from the ToAdded of messages it received. A node drops an
// acknowledgement whose FromAdded is below the index at which it added
// the sender last: it comes from an earlier copy (see Node.stale).
type Envelope struct {
	Shard              uint16
	Msg                *raftpb.Message
	ToAdded, FromAdded uint64
}

// Transport carries messages between the replicas of a cluster. Send must
// not block: a message it cannot deliver (the peer is unreachable, its
// queue is full) is dropped, which Raft tolerates, and the sender is
// told with Node.Unreachable where it can be. The receiving side hands
// the messages to its Node with Receive.
type Transport interface {
	Send(from uint64, envs []Envelope)
}

package replica

import "go.etcd.io/raft/v3/raftpb"

// Envelope is a Raft message of one shard's group.
type Envelope struct {
	Shard uint16
	Msg   *raftpb.Message
}

// Transport carries messages between the replicas of a cluster. Send must
// not block: a message it cannot deliver (the peer is unreachable, its
// queue is full) is dropped, which Raft tolerates, and the sender is
// told with Node.Unreachable where it can be. The receiving side hands
// the messages to its Node with Receive.
type Transport interface {
	Send(from uint64, envs []Envelope)
}

package cluster

import (
	"context"
	"errors"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/boomerangd/boomerang/internal/replica"
)

// Defaults for Config fields left at zero.
const (
	DefaultReplicationFactor = 3
	DefaultDeadTimeout       = time.Minute
	DefaultSessionTTL        = 5 // seconds
	DefaultInterval          = 500 * time.Millisecond
	DefaultCatchUpLag        = 64
)

// Local is the node's replicas, as the agent changes them: a
// *replica.Node.
type Local interface {
	Host(ctx context.Context, shard uint16, voters []uint64) error
	Unhost(ctx context.Context, shard uint16) error
	ChangeConf(ctx context.Context, shard uint16, change replica.ConfChangeType, peer uint64) error
	TransferLeadership(ctx context.Context, shard uint16, peer uint64) error
	Status(ctx context.Context) ([]replica.ShardStatus, error)
}

var _ Local = (*replica.Node)(nil)

// Peers is told the members' replication addresses: a
// *replica.TCPTransport.
type Peers interface {
	SetPeers(map[uint64]string)
}

// Config configures a Member.
type Config struct {
	// Cluster names the cluster; its keys live under /boomerang/<Cluster>/.
	// Required.
	Cluster string
	// Node describes this node; ID and Raft are required.
	Node NodeInfo
	// Etcd is the client of the cluster's etcd. Required; the member
	// owns it and Stop closes it.
	Etcd *clientv3.Client
	// Shards is the number of shards. Required.
	Shards int
	// System places the system group (store.SystemShard) too, on at
	// least SystemReplicas voters and a learner on every other node;
	// Local must then feed it to its state machine (replica.Config.System).
	// Every node must be given the same.
	System bool
	// Local is this node's replicas. Required.
	Local Local
	// Peers, when set, is kept told of the members' replication
	// addresses.
	Peers Peers
	// ReplicationFactor is how many replicas each shard has when that
	// many nodes exist. Default 3.
	ReplicationFactor int
	// DeadTimeout is how long a node may be gone before its replicas are
	// placed elsewhere. Default 1 minute.
	DeadTimeout time.Duration
	// SessionTTL is the lease of this node's membership, in seconds: a
	// node that stops renewing it leaves the members after about as long.
	// Default 5.
	SessionTTL int
	// Interval is how often the agent and the controller look again
	// without being told of a change (a learner catching up is no etcd
	// event). Default 500 ms.
	Interval time.Duration
	// CatchUpLag is how many entries behind the leader's commit index a
	// learner may be and still be promoted. Default 64.
	CatchUpLag uint64
	// Logger receives placement changes and errors. Default: discard.
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() {
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultReplicationFactor
	}
	if c.DeadTimeout == 0 {
		c.DeadTimeout = DefaultDeadTimeout
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.CatchUpLag == 0 {
		c.CatchUpLag = DefaultCatchUpLag
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.Cluster == "":
		return errors.New("cluster: Config.Cluster is required")
	case c.Node.ID == 0 || c.Node.Raft == "":
		return errors.New("cluster: Config.Node needs an ID above 0 and a Raft address")
	case c.Etcd == nil || c.Local == nil:
		return errors.New("cluster: Config.Etcd and Local are required")
	case c.Shards <= 0 || c.Shards > 1<<16:
		return errors.New("cluster: Config.Shards must be between 1 and 65536")
	case c.ReplicationFactor < 1 || c.DeadTimeout < 0 || c.SessionTTL < 1 || c.Interval < 0:
		return errors.New("cluster: Config.ReplicationFactor and SessionTTL must be at least 1, durations not negative")
	}
	return nil
}

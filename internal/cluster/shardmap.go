package cluster

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/boomerangd/boomerang/internal/store"
)

// NodeInfo is what a node publishes of itself while it is a member.
type NodeInfo struct {
	ID uint64 `json:"id"`
	// Raft is the address its peers reach its replication port at.
	Raft string `json:"raft"`
	// TCP and HTTP are the addresses clients reach its raw TCP and HTTP
	// ports at; empty when it serves none.
	TCP  string `json:"tcp,omitempty"`
	HTTP string `json:"http,omitempty"`
	// Zone, when set, spreads replicas over zones before nodes.
	Zone string `json:"zone,omitempty"`
}

// Marks an operator sets on a node.
const (
	// MarkDraining: the node's replicas move away; it stays a member.
	MarkDraining = "draining"
	// MarkRemoved: the node's replicas move away and it never gets any
	// again.
	MarkRemoved = "removed"
)

// Placement is where one shard lives.
type Placement struct {
	// Replicas are the nodes that hold the shard's replicas.
	Replicas []uint64 `json:"replicas"`
	// Leader is the replica preferred as leader.
	Leader uint64 `json:"leader"`
	// Learners are nodes that hold a replica that does not vote: the
	// system group's on every node beyond its voters, so that every node
	// reads clients and sessions locally.
	Learners []uint64 `json:"learners,omitempty"`
	// Initial are the voters a new group starts with: the replicas when
	// the map was created, until the first change of the shard's
	// replicas. A node that joins later starts empty and waits for its
	// leader's snapshot.
	Initial []uint64 `json:"initial,omitempty"`
}

// ShardMap places every shard.
type ShardMap struct {
	Shards []Placement `json:"shards"`
	// System places the system group (store.SystemShard: clients and
	// sessions); empty in a map written before it was placed.
	System Placement `json:"system"`
	// Revision is the etcd revision the map was last written at (0: not
	// written yet); a write must name it.
	Revision int64 `json:"-"`
}

func decodeMap(data []byte, rev int64) (*ShardMap, error) {
	m := new(ShardMap)
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("cluster: shard map: %w", err)
	}
	m.Revision = rev
	return m, nil
}

// Of returns shard's placement, or the zero one.
func (m *ShardMap) Of(shard uint16) Placement {
	if m != nil && shard == store.SystemShard {
		return m.System
	}
	if m == nil || int(shard) >= len(m.Shards) {
		return Placement{}
	}
	return m.Shards[shard]
}

// Contains reports whether node holds one of p's (voting) replicas.
func (p Placement) Contains(node uint64) bool { return slices.Contains(p.Replicas, node) }

// holds reports whether node holds a replica of p, voting or not.
func (p Placement) holds(node uint64) bool {
	return p.Contains(node) || slices.Contains(p.Learners, node)
}

// clone deep-copies m.
func (m *ShardMap) clone() *ShardMap {
	out := &ShardMap{Revision: m.Revision, Shards: make([]Placement, len(m.Shards)), System: m.System.clone()}
	for i, p := range m.Shards {
		out.Shards[i] = p.clone()
	}
	return out
}

func (p Placement) clone() Placement {
	return Placement{Replicas: slices.Clone(p.Replicas), Leader: p.Leader, Learners: slices.Clone(p.Learners), Initial: slices.Clone(p.Initial)}
}

// each calls fn with every placement of m, the system group's last.
func (m *ShardMap) each(fn func(shard uint16, p *Placement)) {
	for i := range m.Shards {
		fn(uint16(i), &m.Shards[i])
	}
	fn(store.SystemShard, &m.System)
}

// equal reports whether m and o place every shard the same.
func (m *ShardMap) equal(o *ShardMap) bool {
	return slices.EqualFunc(m.Shards, o.Shards, Placement.equal) && m.System.equal(o.System)
}

func (p Placement) equal(o Placement) bool {
	return p.Leader == o.Leader && slices.Equal(p.Replicas, o.Replicas) && slices.Equal(p.Learners, o.Learners) && slices.Equal(p.Initial, o.Initial)
}

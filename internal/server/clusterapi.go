package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/store"
)

// errStandalone: a cluster operation on a standalone node.
var errStandalone = errors.New("server: this node is standalone, not part of a cluster")

// ChangeCluster drains, undrains or removes a node, or moves a shard's
// replica or leadership (admin only).
func (s *Service) ChangeCluster(ctx context.Context, p auth.Principal, req *boomerangv1.ChangeClusterRequest) (*boomerangv1.ChangeClusterResponse, error) {
	if !p.Admin() {
		return nil, ErrAdminOnly
	}
	f := s.fwd.Load()
	if f == nil {
		return nil, invalid("change", "%v", errStandalone)
	}
	m := f.member
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	mark := func(node, mark string) (*boomerangv1.ChangeClusterResponse, error) {
		id, err := nodeID("node", node)
		if err != nil {
			return nil, err
		}
		return &boomerangv1.ChangeClusterResponse{}, cluster.SetMark(ctx, m.Client(), m.Cluster(), id, mark)
	}
	switch c := req.Change.(type) {
	case *boomerangv1.ChangeClusterRequest_Drain:
		return mark(c.Drain, cluster.MarkDraining)
	case *boomerangv1.ChangeClusterRequest_Undrain:
		return mark(c.Undrain, "")
	case *boomerangv1.ChangeClusterRequest_Remove:
		return mark(c.Remove, cluster.MarkRemoved)
	case *boomerangv1.ChangeClusterRequest_Move:
		var from uint64
		var err error
		if c.Move.From != "" {
			if from, err = nodeID("move.from", c.Move.From); err != nil {
				return nil, err
			}
		}
		to, err := nodeID("move.to", c.Move.To)
		if err != nil {
			return nil, err
		}
		if c.Move.Shard > 0xffff {
			return nil, invalid("move.shard", "no shard %d", c.Move.Shard)
		}
		rev, err := cluster.Move(ctx, m.Client(), m.Cluster(), uint16(c.Move.Shard), from, to)
		if err != nil {
			return nil, invalid("move", "%v", err)
		}
		return &boomerangv1.ChangeClusterResponse{MapRevision: rev}, nil
	}
	return nil, invalid("change", "is required")
}

func nodeID(field, s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, invalid(field, "want a node id above 0, got %q", s)
	}
	return id, nil
}

// clusterView describes a cluster node's view: the members and marks
// etcd holds, the shard map, and the leaders the nodes report.
func (s *Server) clusterView() *boomerangv1.GetClusterResponse {
	resp := &boomerangv1.GetClusterResponse{Name: s.cfg.Cluster.Name}
	st := s.cl.member.State()
	if st == nil {
		return resp
	}
	ids := map[uint64]bool{}
	for id := range st.Nodes {
		ids[id] = true
	}
	for id := range st.Marks {
		ids[id] = true
	}
	if st.Map != nil {
		resp.MapRevision = st.Map.Revision
		for _, p := range st.Map.Shards {
			for _, id := range p.Replicas {
				ids[id] = true
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		n, live := st.Nodes[id]
		node := &boomerangv1.ClusterNode{
			Id: strconv.FormatUint(id, 10), TcpAddress: n.TCP, HttpAddress: n.HTTP, RaftAddress: n.Raft, Zone: n.Zone,
			Mark: st.Marks[id], Live: live, Healthy: live, Health: "member",
		}
		if !live {
			node.Health = "gone: its membership lease lapsed"
		}
		if id == s.cfg.Cluster.NodeID {
			node.StartedMs, node.Version = s.started.UnixMilli(), s.cfg.Version
		}
		resp.Nodes = append(resp.Nodes, node)
	}
	for shard := range uint16(s.st.Shards()) {
		cs := clusterShard(st, shard)
		cs.Partition = uint32(s.sched.PartitionOf(shard))
		resp.Shards = append(resp.Shards, cs)
	}
	resp.System = clusterShard(st, store.SystemShard)
	return resp
}

// clusterShard is shard's placement and the leader the nodes report.
func clusterShard(st *cluster.State, shard uint16) *boomerangv1.ClusterShard {
	cs := &boomerangv1.ClusterShard{Shard: uint32(shard)}
	if leader, ok := st.Leader(shard); ok {
		cs.Leader = strconv.FormatUint(leader.ID, 10)
	}
	p := st.Map.Of(shard)
	for _, id := range p.Replicas {
		cs.Replicas = append(cs.Replicas, strconv.FormatUint(id, 10))
	}
	for _, id := range p.Learners {
		cs.Learners = append(cs.Learners, strconv.FormatUint(id, 10))
	}
	if p.Leader != 0 {
		cs.PreferredLeader = strconv.FormatUint(p.Leader, 10)
	}
	return cs
}

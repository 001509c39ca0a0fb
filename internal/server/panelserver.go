package server

import (
	"slices"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// standaloneNode names this node on the cluster page until the cluster
// gives nodes ids.
const standaloneNode = "standalone"

// newPanel starts the sampler and gathers what the panel's operations
// read.
func (s *Server) newPanel() *panel {
	s.samp = newSampler(&s.cfg, s.sched.Stats, s.hist)
	s.samp.start()
	return &panel{
		hist: s.hist, samp: s.samp, audit: newAuditLog(s.cfg.Clock, s.cfg.Panel.AuditEntries),
		payloadSearch: s.cfg.Panel.PayloadSearchBytes, cluster: s.cluster, pools: s.pools,
	}
}

// protocolOf is the protocol an attempt of t uses: its callback's, else
// its client's.
func (s *Server) protocolOf(t *storepb.Task) storepb.Protocol {
	client, _, _ := s.auth.Defaults(t.Client)
	return delivery.Effective(t.Callback, client).GetProtocol()
}

// cluster describes the cluster, or a standalone node: itself, leading
// every shard.
func (s *Server) cluster() *boomerangv1.GetClusterResponse {
	if s.cl != nil && s.cl.member != nil {
		return s.clusterView()
	}
	health, healthy := "ready", s.ready.Load()
	if err := s.sched.Err(); err != nil {
		health, healthy = "the scheduler stopped after a storage failure: "+err.Error(), false
	} else if !healthy {
		health = "starting or stopping"
	}
	resp := &boomerangv1.GetClusterResponse{Standalone: true, Nodes: []*boomerangv1.ClusterNode{{
		Id: standaloneNode, TcpAddress: s.TCPAddr(), HttpAddress: s.HTTPAddr(), Healthy: healthy, Health: health,
		StartedMs: s.started.UnixMilli(), Version: s.cfg.Version,
	}}}
	for shard := range uint16(s.st.Shards()) {
		resp.Shards = append(resp.Shards, &boomerangv1.ClusterShard{
			Shard: uint32(shard), Leader: standaloneNode, Replicas: []string{standaloneNode},
			Partition: uint32(s.sched.PartitionOf(shard)),
		})
	}
	return resp
}

// pools reports the delivery engine's dispatch pools, by name.
func (s *Server) pools() []*boomerangv1.PoolInfo {
	if s.engine == nil {
		return nil
	}
	stats := s.engine.Stats().Pools
	names := make([]string, 0, len(stats))
	for name := range stats {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*boomerangv1.PoolInfo, len(names))
	for i, name := range names {
		p := stats[name]
		out[i] = &boomerangv1.PoolInfo{
			Name: name, MaxConcurrent: uint32(p.Limit), InUse: uint32(p.InUse), Queued: uint32(p.Queued),
			MaxPerSecond: s.cfg.Pools[name].MaxPerSecond, Rejected: p.Rejected,
		}
	}
	return out
}

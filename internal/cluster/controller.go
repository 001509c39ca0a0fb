package cluster

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// control campaigns to be the placement controller and, while elected,
// keeps the shard map up to date.
func (m *Member) control(ctx context.Context, s *concurrency.Session) {
	e := concurrency.NewElection(s, m.prefix+electDir)
	if err := e.Campaign(ctx, strconv.FormatUint(m.cfg.Node.ID, 10)); err != nil {
		return // the session or ctx ended
	}
	m.log.Info("placement controller elected", "node", m.cfg.Node.ID)
	gone := make(map[uint64]time.Time) // members last seen, since they vanished
	seen := make(map[uint64]bool)
	for {
		if st, err := m.read(ctx); err == nil {
			m.place(ctx, e, st, seen, gone)
		}
		if !m.next(ctx) {
			return
		}
	}
}

// place writes the next map if it differs from the current one.
func (m *Member) place(ctx context.Context, e *concurrency.Election, st *State, seen map[uint64]bool, gone map[uint64]time.Time) {
	in := planInput{shards: m.cfg.Shards, rf: m.cfg.ReplicationFactor, live: map[uint64]NodeInfo{}, keep: map[uint64]bool{}, draining: map[uint64]bool{}}
	now := time.Now()
	for id, n := range st.Nodes {
		seen[id] = true
		delete(gone, id)
		switch st.Marks[id] {
		case "":
			in.live[id] = n
			in.keep[id] = true
		case MarkDraining:
			in.draining[id] = true
		}
	}
	// Nodes in the map count as seen: a controller elected while one is
	// down still waits the timeout before replacing it.
	if st.Map != nil {
		st.Map.each(func(_ uint16, p *Placement) {
			for _, id := range p.Replicas {
				seen[id] = true
			}
		})
	}
	for id := range seen {
		if _, live := st.Nodes[id]; live || st.Marks[id] != "" {
			continue
		}
		if _, ok := gone[id]; !ok {
			gone[id] = now
		}
		if now.Sub(gone[id]) < m.cfg.DeadTimeout {
			in.keep[id] = true
		}
	}
	if len(in.live) == 0 {
		return
	}
	cur := st.Map
	if cur == nil {
		if cur = m.seed(st, in); cur == nil {
			return
		}
	}
	if m.cfg.System && len(cur.System.Replicas) == 0 { // a new map, or one written before the system group was placed
		cur = cur.clone()
		cur.System = seedSystem(m.cfg.Node.ID, m.leaderOf(st, in))
	}
	next := plan(cur, in)
	next.each(func(shard uint16, p *Placement) {
		// A group that has a leader exists: a replica that joins it later
		// waits for a snapshot rather than start a group of its own.
		if _, ok := st.Leader(shard); ok {
			p.Initial = nil
		}
	})
	if st.Map != nil && next.equal(st.Map) {
		return
	}
	data, err := json.Marshal(next)
	if err != nil {
		return
	}
	key := m.prefix + mapKey
	var rev int64
	if st.Map != nil {
		rev = st.Map.Revision
	}
	resp, err := m.cfg.Etcd.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()),
		clientv3.Compare(clientv3.ModRevision(key), "=", rev),
	).Then(clientv3.OpPut(key, string(data))).Commit()
	switch {
	case err != nil:
		m.log.Warn("write the shard map", "err", err)
	case !resp.Succeeded:
		m.log.Info("shard map changed under the controller; planning again")
	default:
		m.log.Info("shard map written", "revision", resp.Header.Revision, "nodes", len(in.live))
	}
}

// seed is the first map, once every live node has reported what it
// leads: each shard starts where it is led already, else on this node.
func (m *Member) seed(st *State, in planInput) *ShardMap {
	for id := range in.live {
		if _, ok := st.Leads[id]; !ok {
			return nil
		}
	}
	first := m.cfg.Node.ID
	if _, ok := in.live[first]; !ok {
		first = slices.Min(slices.Collect(maps.Keys(in.live)))
	}
	return seed(m.cfg.Shards, first, m.leaderOf(st, in))
}

// leaderOf returns the live node that leads a shard, if one does.
func (m *Member) leaderOf(st *State, in planInput) func(shard uint16) (uint64, bool) {
	return func(shard uint16) (uint64, bool) {
		n, ok := st.Leader(shard)
		return n.ID, ok && in.live[n.ID].ID != 0
	}
}

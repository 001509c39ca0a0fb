package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/boomerangd/boomerang/internal/store"
)

// Keys under the cluster's prefix.
const (
	nodesDir   = "nodes/"   // nodes/<id>: NodeInfo, under the node's lease
	marksDir   = "marks/"   // marks/<id>: MarkDraining or MarkRemoved
	leadersDir = "leaders/" // leaders/<id>: the shards the node leads, under its lease
	mapKey     = "map"      // the ShardMap
	electDir   = "controller/"
	// forwardKeyName holds the key nodes sign forwarded requests with.
	forwardKeyName = "forward-key"
	// secretKeyName holds the key signing secrets are sealed with when
	// the nodes are given none (see ShareSecretKey).
	secretKeyName = "secret-key"
)

// Prefix is the key prefix of cluster's keys in etcd.
func Prefix(cluster string) string { return "/boomerang/" + cluster + "/" }

// State is what etcd holds of the cluster at one revision.
type State struct {
	Revision int64
	Nodes    map[uint64]NodeInfo
	Marks    map[uint64]string
	// Leads maps each node to the shards it reports leading, with the
	// term it leads them in.
	Leads map[uint64]map[uint16]uint64
	// Map is nil until the controller writes the first one.
	Map *ShardMap
}

// ReadState reads the cluster's state in one linearizable read.
func ReadState(ctx context.Context, cli *clientv3.Client, cluster string) (*State, error) {
	prefix := Prefix(cluster)
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: read state: %w", err)
	}
	s := &State{
		Revision: resp.Header.Revision, Nodes: map[uint64]NodeInfo{}, Marks: map[uint64]string{},
		Leads: map[uint64]map[uint16]uint64{},
	}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), prefix)
		if err := s.add(key, kv.Value, kv.ModRevision); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *State) add(key string, value []byte, modRev int64) error {
	if key == mapKey {
		m, err := decodeMap(value, modRev)
		s.Map = m
		return err
	}
	dir, idText, ok := strings.Cut(key, "/")
	if !ok || dir+"/" == electDir {
		return nil
	}
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return nil // not one of ours
	}
	switch dir + "/" {
	case nodesDir:
		var n NodeInfo
		if err := json.Unmarshal(value, &n); err != nil {
			return fmt.Errorf("cluster: node %d: %w", id, err)
		}
		s.Nodes[id] = n
	case marksDir:
		s.Marks[id] = string(value)
	case leadersDir:
		var leads map[uint16]uint64
		if err := json.Unmarshal(value, &leads); err != nil {
			return fmt.Errorf("cluster: leaders of node %d: %w", id, err)
		}
		s.Leads[id] = leads
	}
	return nil
}

// Leader returns the node that reports leading shard in the highest
// term, and whether one does.
func (s *State) Leader(shard uint16) (NodeInfo, bool) {
	var best NodeInfo
	var term uint64
	for id, leads := range s.Leads {
		if t, ok := leads[shard]; ok && t > term {
			if n, live := s.Nodes[id]; live {
				best, term = n, t
			}
		}
	}
	return best, term > 0
}

// SetMark marks node (MarkDraining, MarkRemoved), or clears its mark
// when mark is empty.
func SetMark(ctx context.Context, cli *clientv3.Client, cluster string, node uint64, mark string) error {
	key := Prefix(cluster) + marksDir + strconv.FormatUint(node, 10)
	var err error
	if mark == "" {
		_, err = cli.Delete(ctx, key)
	} else {
		_, err = cli.Put(ctx, key, mark)
	}
	return err
}

// ErrNoMap: the controller has not written the first shard map yet.
var ErrNoMap = errors.New("cluster: no shard map yet")

// Move moves shard's replica from one node to another (from 0: moves
// only the preferred leader, to a node that holds a replica already),
// and makes to its preferred leader, with compare-and-swap on the map's
// revision. It returns the revision the map was written at.
func Move(ctx context.Context, cli *clientv3.Client, cluster string, shard uint16, from, to uint64) (int64, error) {
	st, err := ReadState(ctx, cli, cluster)
	if err != nil {
		return 0, err
	}
	if st.Map == nil {
		return 0, ErrNoMap
	}
	system := shard == store.SystemShard
	if int(shard) >= len(st.Map.Shards) && !system {
		return 0, fmt.Errorf("cluster: no shard %d", shard)
	}
	if _, ok := st.Nodes[to]; !ok {
		return 0, fmt.Errorf("cluster: node %d is not a live member", to)
	}
	m := st.Map.clone()
	p := &m.System
	if !system {
		p = &m.Shards[shard]
	}
	switch {
	case system && from != 0:
		// Its replicas follow the members (a voter on the first nodes, a
		// learner on every other): the controller places them.
		return 0, errors.New("cluster: the system group's replicas follow the members; only its leadership moves (FROM -)")
	case from == 0 && !p.Contains(to):
		return 0, fmt.Errorf("cluster: node %d holds no replica of shard %d", to, shard)
	case from != 0 && !p.Contains(from):
		return 0, fmt.Errorf("cluster: node %d holds no replica of shard %d", from, shard)
	case from != 0 && p.Contains(to):
		return 0, fmt.Errorf("cluster: node %d already holds a replica of shard %d", to, shard)
	case from != 0:
		p.Replicas[slices.Index(p.Replicas, from)] = to
		slices.Sort(p.Replicas)
	}
	p.Leader = to
	data, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	key := Prefix(cluster) + mapKey
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", st.Map.Revision)).
		Then(clientv3.OpPut(key, string(data))).Commit()
	switch {
	case err != nil:
		return 0, err
	case !resp.Succeeded:
		return 0, errors.New("cluster: the shard map changed meanwhile; try again")
	}
	return resp.Header.Revision, nil
}

// ShareSecretKey returns the key the cluster's nodes seal signing
// secrets with when they are given none: the one in etcd, or, if no node
// stored one yet, key, which it stores. The system group's records are
// the same on every node, so they must be opened with the same key.
func ShareSecretKey(ctx context.Context, cli *clientv3.Client, cluster string, key []byte) ([]byte, error) {
	k := Prefix(cluster) + secretKeyName
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(key))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: secret key: %w", err)
	}
	if resp.Succeeded {
		return key, nil
	}
	return resp.Responses[0].GetResponseRange().Kvs[0].Value, nil
}

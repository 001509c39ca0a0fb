package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
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

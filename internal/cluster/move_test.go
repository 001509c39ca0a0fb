package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/boomerangd/boomerang/internal/store"
)

// Move changes a shard's replica or preferred leader in the map, and
// only the system group's preferred leader: its replicas follow the
// members.
func TestMove(t *testing.T) {
	cli := client(t, startEtcd(t))
	ctx := context.Background()
	prefix := Prefix("test")
	for id := range uint64(4) {
		data, _ := json.Marshal(NodeInfo{ID: id + 1, Raft: "127.0.0.1:1"})
		if _, err := cli.Put(ctx, prefix+nodesDir+strconv.FormatUint(id+1, 10), string(data)); err != nil {
			t.Fatal(err)
		}
	}
	m := &ShardMap{
		Shards: []Placement{{Replicas: []uint64{1, 2, 3}, Leader: 1}},
		System: Placement{Replicas: []uint64{1, 2, 3}, Leader: 1, Learners: []uint64{4}},
	}
	data, _ := json.Marshal(m)
	if _, err := cli.Put(ctx, prefix+mapKey, string(data)); err != nil {
		t.Fatal(err)
	}
	placed := func(shard uint16) Placement {
		t.Helper()
		st, err := ReadState(ctx, cli, "test")
		if err != nil {
			t.Fatal(err)
		}
		return st.Map.Of(shard)
	}

	if _, err := Move(ctx, cli, "test", 0, 1, 4); err != nil {
		t.Fatal(err)
	}
	if p := placed(0); !slices.Equal(p.Replicas, []uint64{2, 3, 4}) || p.Leader != 4 {
		t.Fatalf("shard 0 after moving 1 to 4: %+v", p)
	}
	if _, err := Move(ctx, cli, "test", store.SystemShard, 0, 3); err != nil {
		t.Fatal(err)
	}
	if p := placed(store.SystemShard); !slices.Equal(p.Replicas, []uint64{1, 2, 3}) || p.Leader != 3 {
		t.Fatalf("the system group after moving its leadership to 3: %+v", p)
	}
	for _, bad := range []struct {
		shard    uint16
		from, to uint64
	}{
		{store.SystemShard, 1, 4}, // a replica of the system group
		{store.SystemShard, 0, 4}, // leadership to a learner
		{1, 0, 2},                 // no such shard
		{0, 1, 2},                 // 1 holds none
		{0, 2, 3},                 // 3 holds one already
		{0, 0, 9},                 // not a member
	} {
		if _, err := Move(ctx, cli, "test", bad.shard, bad.from, bad.to); err == nil {
			t.Errorf("Move(%d, %d, %d) was accepted", bad.shard, bad.from, bad.to)
		}
	}
}

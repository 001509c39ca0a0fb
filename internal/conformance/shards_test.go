package conformance

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/boomerangd/boomerang/internal/shard"
)

// shardTask is a new task and the shard it goes to among Shards: an SDK
// that routes sends it to that shard's leader. Placed false means any
// shard (an ungrouped task without keys).
type shardTask struct {
	Name           string `json:"name"`
	Shards         int    `json:"shards"`
	Client         string `json:"client"`
	Group          string `json:"group,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	ReplaceKey     string `json:"replace_key,omitempty"`
	Shard          int    `json:"shard"`
	Placed         bool   `json:"placed"`
}

// shardID is a task id (decimal) and the shard it carries.
type shardID struct {
	TaskID string `json:"task_id"`
	Shard  int    `json:"shard"`
}

type shards struct {
	Format  int         `json:"format"`
	Comment string      `json:"comment"`
	Tasks   []shardTask `json:"tasks"`
	IDs     []shardID   `json:"ids"`
}

// shardsFile holds internal/shard's answers, which the store keeps its
// data by and the SDKs route by.
func shardsFile(*testing.T) shards {
	f := shards{Format: formatVersion, Comment: "Routing: the shard of a new task (group, else idempotency key, else replace key; placed false: any shard) and the shard a task id carries. See README.md."}
	add := func(name string, n int, client, group, idem, replace string) {
		s, placed := shard.OfTask(n, client, group, idem, replace)
		f.Tasks = append(f.Tasks, shardTask{name, n, client, group, idem, replace, int(s), placed})
	}
	add("empty_names", 256, "", "", "", "")
	add("group_empty_client", 256, "", "g", "", "")
	add("plain_group", 64, "acme", "orders", "", "")
	add("non_ascii", 256, "ünïcode", "グループ", "", "")
	add("group_wins_over_keys", 64, "billing", "customer 7", "order-1", "reminder-1")
	add("idempotency_key", 64, "billing", "", "order-1", "reminder-1")
	add("replace_key", 64, "billing", "", "", "reminder-1")
	add("one_shard", 1, "billing", "customer 7", "", "")
	for i := range 24 {
		add(fmt.Sprintf("group_%d", i), 64, "client-"+strconv.Itoa(i%3), fmt.Sprintf("group-%d", i*7919), "", "")
	}
	for _, id := range []uint64{1, 1<<48 - 1, 1 << 48, 63<<48 | 12345, bigID, maxID} {
		f.IDs = append(f.IDs, shardID{strconv.FormatUint(id, 10), int(shard.OfID(id))})
	}
	return f
}

func checkShards(t *testing.T) {
	var f shards
	load(t, "shards.json", &f)
	for _, v := range f.Tasks {
		s, placed := shard.OfTask(v.Shards, v.Client, v.Group, v.IdempotencyKey, v.ReplaceKey)
		if int(s) != v.Shard || placed != v.Placed {
			t.Errorf("%s: shard %d placed %v, want %d %v", v.Name, s, placed, v.Shard, v.Placed)
		}
	}
	for _, v := range f.IDs {
		id, err := strconv.ParseUint(v.TaskID, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := shard.OfID(id); int(got) != v.Shard {
			t.Errorf("OfID(%d) = %d, want %d", id, got, v.Shard)
		}
	}
}

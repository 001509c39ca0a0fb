package store

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/boomerangd/boomerang/internal/mix"
)

func TestMakeIDRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][2]uint64{{0, 1}, {1, 1}, {DefaultShards - 1, MaxCounter}, {17, 1 << 40}}
	for range 1000 {
		cases = append(cases, [2]uint64{rng.Uint64N(DefaultShards), 1 + rng.Uint64N(MaxCounter)})
	}
	for _, c := range cases {
		shard, n := uint16(c[0]), c[1]
		id := MakeID(shard, n)
		if ShardOf(id) != shard || CounterOf(id) != n {
			t.Fatalf("MakeID(%d, %d) = %#x: ShardOf %d, CounterOf %d", shard, n, id, ShardOf(id), CounterOf(id))
		}
	}
	// Ids of a lower shard sort before every id of a higher shard, which
	// is what lets id order cross shards in key order.
	if MakeID(1, MaxCounter) >= MakeID(2, 1) {
		t.Fatal("ids are not ordered by shard first")
	}
}

func TestMakeIDPanicsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		shard uint16
		n     uint64
	}{{MaxShards, 1}, {0xffff, 1}, {0, MaxCounter + 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MakeID(%d, %d) did not panic", c.shard, c.n)
				}
			}()
			MakeID(c.shard, c.n)
		}()
	}
}

// groupShardVectors pin GroupShard among 256 shards: these values are on
// disk in every store, so a change here is a format break, not a test
// update. With fewer shards a group's shard is the same value's low bits.
var groupShardVectors = []struct {
	client, group string
	shard         uint16
}{
	{"", "", 32},
	{"acme", "orders", 90},
	{"acme", "invoices", 31},
	{"a", "bc", 158},
	{"ab", "c", 90},
	{"client-1", "group-1", 247},
	{"client-1", "group-2", 189},
	{"ünïcode", "グループ", 199},
}

func TestGroupShardVectors(t *testing.T) {
	t.Parallel()
	for _, v := range groupShardVectors {
		if got := GroupShardOf(256, v.client, v.group); got != v.shard {
			t.Errorf("GroupShardOf(256, %q, %q) = %d, want %d", v.client, v.group, got, v.shard)
		}
		if got := GroupShardOf(DefaultShards, v.client, v.group); got != v.shard&(DefaultShards-1) {
			t.Errorf("GroupShardOf(%d, %q, %q) = %d, want %d", DefaultShards, v.client, v.group, got, v.shard&(DefaultShards-1))
		}
	}
}

// TestGroupShardDefinition checks GroupShard against its definition written
// with the standard library's FNV-1a.
func TestGroupShardDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		client := randomString(rng, 12)
		group := randomString(rng, 12)
		h := fnv.New64a()
		h.Write([]byte(client))
		h.Write([]byte{0})
		h.Write([]byte(group))
		want := uint16(mix.Mix64(h.Sum64()) % DefaultShards)
		if got := GroupShardOf(DefaultShards, client, group); got != want {
			t.Fatalf("GroupShardOf(DefaultShards, %q, %q) = %d, want %d", client, group, got, want)
		}
	}
}

func TestGroupShardDistribution(t *testing.T) {
	t.Parallel()
	const perShard = 1000
	var counts [DefaultShards]int
	for i := range DefaultShards * perShard {
		counts[GroupShardOf(DefaultShards, "client", fmt.Sprintf("group-%d", i))]++
	}
	// Binomial with mean 1000 and deviation about 31.6: six deviations
	// either side is a broken hash, not bad luck.
	var chi2 float64
	for shard, n := range counts {
		if n < perShard-190 || n > perShard+190 {
			t.Errorf("shard %d got %d groups, want about %d", shard, n, perShard)
		}
		d := float64(n - perShard)
		chi2 += d * d / perShard
	}
	// 255 degrees of freedom: the 99.99th percentile is about 350.
	if chi2 > 350 {
		t.Errorf("chi-squared %.1f over %d shards: distribution is skewed", chi2, DefaultShards)
	}
}

func randomString(rng *rand.Rand, maxLen int) string {
	b := make([]byte, rng.IntN(maxLen+1))
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return string(b)
}

package store

import (
	"fmt"

	"github.com/boomerangd/boomerang/internal/shard"
)

// A store's shards: a power of two chosen when it is created (Options.
// Shards), recorded in it and fixed from then on, since every sharded key
// carries its shard, and task ids carry theirs.
const (
	// DefaultShards is the shards of a store created with Options.Shards 0.
	DefaultShards = 64
	// MaxShards bounds Options.Shards.
	MaxShards = 1 << 12
	// legacyShards is the shards of a store made before the number was
	// recorded.
	legacyShards = 256
)

const (
	idCounterBits = 48
	idCounterMask = 1<<idCounterBits - 1
)

// MaxCounter is the largest per-shard counter a task id can hold.
const MaxCounter = idCounterMask

// MakeID returns the task id for counter n of shard: the shard in the top
// 16 bits, n in the low 48. Counters start at 1; id 0 is never a task id,
// so it can serve as "no cursor". It panics if shard >= MaxShards or n is
// out of range, which only a programming error can cause.
func MakeID(shard uint16, n uint64) uint64 {
	if shard >= MaxShards || n > MaxCounter {
		panic(fmt.Sprintf("store: MakeID(%d, %d) out of range", shard, n))
	}
	return uint64(shard)<<idCounterBits | n
}

// ShardOf returns the shard a task id belongs to.
func ShardOf(id uint64) uint16 { return shard.OfID(id) }

// CounterOf returns the per-shard counter of a task id.
func CounterOf(id uint64) uint64 { return id & idCounterMask }

// GroupShard maps a client's group to its shard in s.
func (s *Store) GroupShard(client, group string) uint16 {
	return GroupShardOf(s.shards, client, group)
}

// Shards returns the number of shards of s.
func (s *Store) Shards() int { return s.shards }

// GroupShardOf maps a client's group to its shard among shards, a power
// of two (shard.OfGroup). It is part of the on-disk format: keys and task
// ids were written with its answers, so it must never change.
func GroupShardOf(shards int, client, group string) uint16 {
	return shard.OfGroup(shards, client, group)
}

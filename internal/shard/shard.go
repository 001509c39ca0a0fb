// Package shard maps tasks to shards: a group's shard, the shard of a
// task registered with an idempotency or replace key, and the shard a
// task id carries. The store keys its data by these answers and the SDK
// routes requests by them, so both use this package; it is part of the
// on-disk format and must never change.
package shard

import "github.com/boomerangd/boomerang/internal/mix"

// idCounterBits is the low bits of a task id that hold its shard's
// counter; the shard is in the bits above.
const idCounterBits = 48

// OfID returns the shard a task id belongs to.
func OfID(id uint64) uint16 { return uint16(id >> idCounterBits) }

// OfGroup maps a client's group to its shard among shards, a power of
// two. It is FNV-1a 64 over client, a 0 byte and group, mixed by the
// splitmix64 finalizer so that the low bits, which pick the shard, depend
// on every input byte.
func OfGroup(shards int, client, group string) uint16 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(client); i++ {
		h ^= uint64(client[i])
		h *= prime64
	}
	h *= prime64 // the 0 separator: h ^= 0 is a no-op
	for i := 0; i < len(group); i++ {
		h ^= uint64(group[i])
		h *= prime64
	}
	return uint16(mix.Mix64(h) & uint64(shards-1))
}

// OfReplaceKey is the shard of an ungrouped task with a replace key: a
// function of the key, so a later registration with it finds the task.
func OfReplaceKey(shards int, client, key string) uint16 {
	return OfGroup(shards, client, "\x00replace\x00"+key)
}

// OfIdempotencyKey is the shard of an ungrouped task with an idempotency
// key, so a repeat finds it.
func OfIdempotencyKey(shards int, client, key string) uint16 {
	return OfGroup(shards, client, "\x00"+key)
}

// OfTask is the shard a new task of client goes to, and false for an
// ungrouped task without keys, which may go to any shard. A grouped task
// lives on its group's shard whatever its keys.
func OfTask(shards int, client, group, idempotencyKey, replaceKey string) (uint16, bool) {
	switch {
	case group != "":
		return OfGroup(shards, client, group), true
	case idempotencyKey != "":
		return OfIdempotencyKey(shards, client, idempotencyKey), true
	case replaceKey != "":
		return OfReplaceKey(shards, client, replaceKey), true
	}
	return 0, false
}

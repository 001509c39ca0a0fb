package store

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Idempotency keys in memory. Nearly every key a registration brings is
// new, and a Pebble read that finds nothing still searches the memtables
// and every level's filter: the most expensive read the scheduler makes,
// once per registration that carries a key (an outbox row's, always).
//
// So the store keeps a hash of every idempotency key it holds, per
// shard, counted (two keys may share a hash), and Idempotency reads
// Pebble only for a key whose hash is there. A commit adds the hashes of
// the keys it writes before Pebble shows them and removes those of the
// keys it deletes after, so at every moment a key Pebble holds has its
// hash here: the set may answer "perhaps" for a key that is gone, never
// "no" for one that is there. A batch that replaces a shard's state
// (RestoreShard, DropShard) reloads that shard's hashes from Pebble,
// holding the shard's lock from before the commit until the reload ends.
//
// Memory: about 16 bytes per key held, bounded by the scheduler's
// MaxIdempotencyKeys; Open reads every key once to fill the set.
type idemKeys struct {
	seed   maphash.Seed
	shards []idemShard
}

type idemShard struct {
	mu   sync.Mutex
	n    map[uint64]uint32 // hash → keys with it
	lost bool              // a reload failed: any key may be held
}

// idemWrite is an idempotency key a batch writes (or deletes).
type idemWrite struct {
	shard   uint16
	hash    uint64
	deleted bool
}

func newIdemKeys(shards int) *idemKeys {
	k := &idemKeys{seed: maphash.MakeSeed(), shards: make([]idemShard, shards)}
	for i := range k.shards {
		k.shards[i].n = map[uint64]uint32{}
	}
	return k
}

// hash is a key's hash. A store being opened has no set yet (nil): its
// migration's writes are read by load.
func (k *idemKeys) hash(key []byte) uint64 {
	if k == nil {
		return 0
	}
	return maphash.Bytes(k.seed, key)
}

// shard returns the set of shard i, or nil outside the store's shards.
func (k *idemKeys) shard(i uint16) *idemShard {
	if k == nil || int(i) >= len(k.shards) {
		return nil
	}
	return &k.shards[i]
}

// mayHold reports whether the store may hold the idempotency key whose
// Pebble key is key; false means it does not.
func (k *idemKeys) mayHold(shard uint16, key []byte) bool {
	sh := k.shard(shard)
	if sh == nil {
		return true
	}
	h := k.hash(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.lost || sh.n[h] > 0
}

// written updates the set for a batch's writes: added before the commit
// (before is true), removed after it. It leaves the shards in skip, which
// the batch replaces, to reload.
func (k *idemKeys) written(ws []idemWrite, skip []uint16, before bool) {
	for _, w := range ws {
		sh := k.shard(w.shard)
		if sh == nil || w.deleted == before || slices.Contains(skip, w.shard) {
			continue
		}
		sh.mu.Lock()
		switch {
		case !w.deleted:
			sh.n[w.hash]++
		case sh.n[w.hash] <= 1:
			delete(sh.n, w.hash)
		default:
			sh.n[w.hash]--
		}
		sh.mu.Unlock()
	}
}

// lock locks the sets of shards, in order, and returns their unlock.
func (k *idemKeys) lock(shards []uint16) (unlock func()) {
	slices.Sort(shards)
	var held []*idemShard
	for _, i := range slices.Compact(shards) {
		if sh := k.shard(i); sh != nil {
			sh.mu.Lock()
			held = append(held, sh)
		}
	}
	return func() {
		for _, sh := range held {
			sh.mu.Unlock()
		}
	}
}

// reload refills the sets of shards, whose locks the caller holds, from
// r.
func (k *idemKeys) reload(r pebble.Reader, shards []uint16) error {
	for _, i := range shards {
		sh := k.shard(i)
		if sh == nil {
			continue
		}
		sh.n, sh.lost = map[uint64]uint32{}, true
		p := shardPrefix(tagIdempotency, i)
		if err := scan(r, p, prefixEnd(p), func(key, _ []byte) error {
			sh.n[k.hash(key)]++
			return nil
		}); err != nil {
			return err
		}
		sh.lost = false
	}
	return nil
}

// load fills the sets from every idempotency key in r, at Open.
func (k *idemKeys) load(r pebble.Reader) error {
	return scan(r, []byte{tagIdempotency}, []byte{tagIdempotency + 1}, func(key, _ []byte) error {
		if len(key) < 3 {
			return corruptf("idempotency key %x is too short", key)
		}
		if sh := k.shard(binary.BigEndian.Uint16(key[1:])); sh != nil {
			sh.n[k.hash(key)]++
		}
		return nil
	})
}

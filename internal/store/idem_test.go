package store

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// The store's set of idempotency keys (idem.go) says a key is held
// exactly when Pebble holds it, and Idempotency answers as Pebble does,
// through puts and deletes in plain and state batches, a shard's
// snapshot restored over it, a shard dropped, and reopens.
func TestIdempotencyKeysMatchModel(t *testing.T) {
	t.Parallel()
	const shards, keys = 4, 10
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			dir := t.TempDir()
			s := openIdemStore(t, dir, shards)
			defer func() { closeStore(t, s) }()
			src := openIdemStore(t, t.TempDir(), shards)
			defer closeStore(t, src)
			model := make([]map[string]uint64, shards)
			srcModel := make([]map[string]uint64, shards)
			for i := range model {
				model[i], srcModel[i] = map[string]uint64{}, map[string]uint64{}
			}
			next := uint64(1)
			put := func(m []map[string]uint64, b *Batch, sh uint16, k string) {
				id := MakeID(sh, next)
				must(t, b.PutIdempotency(sh, "acme", k, id, int64(id)))
				m[sh][k] = id
				next++
			}
			b := src.NewBatch()
			for range 20 {
				sh, k := uint16(rng.IntN(shards)), fmt.Sprint("k", rng.IntN(keys))
				if _, ok := srcModel[sh][k]; !ok {
					put(srcModel, b, sh, k)
				}
			}
			must(t, src.Commit(b))

			for step := range 300 {
				sh := uint16(rng.IntN(shards))
				switch r := rng.IntN(20); {
				case r == 0:
					ss, err := src.SnapshotShard(sh)
					must(t, err)
					data, err := ss.Encode()
					must(t, err)
					must(t, ss.Close())
					b := s.NewBatch()
					_, err = b.RestoreShard(sh, data)
					must(t, err)
					must(t, s.Commit(b))
					model[sh] = maps.Clone(srcModel[sh])
				case r == 1:
					b := s.NewBatch()
					must(t, b.DropShard(sh))
					must(t, s.Commit(b))
					model[sh] = map[string]uint64{}
				case r == 2:
					closeStore(t, s)
					s = openIdemStore(t, dir, shards)
				default:
					b := s.NewBatch()
					if r%2 == 0 {
						b = s.NewStateBatch()
					}
					for range 1 + rng.IntN(5) {
						sh, k := uint16(rng.IntN(shards)), fmt.Sprint("k", rng.IntN(keys))
						if id, ok := model[sh][k]; ok {
							must(t, b.DeleteIdempotency(sh, "acme", k, int64(id)))
							delete(model[sh], k)
						} else {
							put(model, b, sh, k)
						}
					}
					must(t, s.CommitNoSync(b))
				}
				checkIdempotency(t, step, s, model, keys)
			}
		})
	}
}

func checkIdempotency(t *testing.T, step int, s *Store, model []map[string]uint64, keys int) {
	t.Helper()
	for sh := range model {
		for i := range keys {
			k := fmt.Sprint("k", i)
			want, held := model[sh][k]
			id, _, err := s.Idempotency(uint16(sh), "acme", k)
			switch {
			case held && (err != nil || id != want):
				t.Fatalf("step %d: shard %d key %s = %d, %v; want %d", step, sh, k, id, err, want)
			case !held && !errors.Is(err, ErrNotFound):
				t.Fatalf("step %d: shard %d key %s = %d, %v; want not found", step, sh, k, id, err)
			}
			if got := s.idem.mayHold(uint16(sh), idempotencyKey(uint16(sh), "acme", k)); got != held {
				t.Fatalf("step %d: shard %d key %s: the set says held %v, the store %v", step, sh, k, got, held)
			}
		}
	}
}

func openIdemStore(t *testing.T, dir string, shards int) *Store {
	t.Helper()
	s, err := Open(dir, Options{Shards: shards})
	must(t, err)
	return s
}

// Keys that share a hash are counted: deleting one leaves the other held.
func TestIdempotencyHashesAreCounted(t *testing.T) {
	k := newIdemKeys(1)
	k.written([]idemWrite{{hash: 7}, {hash: 7}}, nil, true)
	k.written([]idemWrite{{hash: 7, deleted: true}}, nil, false)
	if k.shards[0].n[7] != 1 {
		t.Fatalf("after two puts and a delete of one hash, count %d, want 1", k.shards[0].n[7])
	}
	k.written([]idemWrite{{hash: 7, deleted: true}}, nil, false)
	if _, ok := k.shards[0].n[7]; ok {
		t.Fatal("a hash whose keys are all deleted stays")
	}
}

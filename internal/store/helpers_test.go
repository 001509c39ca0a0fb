package store

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHolderEnv); dir != "" {
		os.Exit(holdLock(dir))
	}
	goleak.VerifyTestMain(m)
}

// openStore opens a store in dir and closes it when the test ends.
func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func closeStore(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// task returns a task of client/group with counter n in the group's shard.
func task(client, group string, n uint64, dueMs int64) *storepb.Task {
	return &storepb.Task{
		Id:      MakeID(GroupShardOf(DefaultShards, client, group), n),
		Client:  client,
		Group:   group,
		Payload: []byte(fmt.Sprintf("payload %d", n)),
		DueMs:   dueMs,
	}
}

// commit applies fill in one batch and fails the test on error.
func commit(t testing.TB, s *Store, fill func(*Batch)) {
	t.Helper()
	b := s.NewBatch()
	fill(b)
	if err := s.Commit(b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// fataler is what helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// rawKeys returns every key in the store but the schema version, as
// decoded parts, by reading Pebble directly.
func rawKeys(t fataler, s *Store) []keyParts {
	t.Helper()
	var keys []keyParts
	err := scan(s.db, nil, nil, func(k, _ []byte) error {
		if k[0] == 0 { // the schema version and the number of shards
			return nil
		}
		p, err := decodeKey(k)
		if err != nil {
			return fmt.Errorf("key %x: %w", k, err)
		}
		keys = append(keys, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// rawKeysOf returns the keys of one key space.
func rawKeysOf(t testing.TB, s *Store, tag byte) []keyParts {
	t.Helper()
	var out []keyParts
	for _, k := range rawKeys(t, s) {
		if k.tag == tag {
			out = append(out, k)
		}
	}
	return out
}

func shardMeta(lastID uint64) *storepb.ShardMeta {
	return &storepb.ShardMeta{LastId: lastID}
}

func client(id string) *storepb.Client {
	return &storepb.Client{Id: id, PasswordHash: []byte("hash-of-" + id), CreatedMs: 42}
}

func assertProtoEqual(t testing.TB, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

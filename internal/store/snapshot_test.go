package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A shard's snapshot restored into another store gives it exactly the
// source's state of that shard, replacing what it had, and leaves its
// other shards alone.
func TestShardSnapshotRoundTrip(t *testing.T) {
	src, dst := openStore(t, t.TempDir()), openStore(t, t.TempDir())
	fill := func(s *Store, shard uint16, n int, payload string) {
		b := s.NewBatch()
		for i := range n {
			id := MakeID(shard, uint64(i+1))
			must(t, b.PutTask(&storepb.Task{Id: id, Seq: id, Client: "acme", Group: "g", Payload: []byte(payload), DueMs: int64(i)}))
		}
		must(t, b.PutGroup(&storepb.Group{Shard: uint32(shard), Client: "acme", Group: "g", Tasks: uint64(n)}))
		must(t, b.PutDeadLetter(&storepb.DeadLetter{Task: &storepb.Task{Id: MakeID(shard, 1000), Client: "acme"}, LastError: "x"}))
		must(t, b.PutIdempotency(shard, "acme", "k-"+payload, MakeID(shard, 1), 5))
		must(t, b.SetApplied(shard, 42, MakeID(shard, uint64(n))))
		must(t, s.Commit(b))
	}
	fill(src, 3, 50, "src")
	fill(src, 4, 5, "src")
	fill(dst, 3, 80, "dst") // to be replaced
	fill(dst, 5, 7, "dst")  // to be kept

	ss, err := src.SnapshotShard(3)
	must(t, err)
	defer ss.Close()
	if ss.Meta.GetApplied() != 42 {
		t.Fatalf("snapshot applied %d, want 42", ss.Meta.GetApplied())
	}
	data, err := ss.Encode()
	must(t, err)
	b := dst.NewBatch()
	meta, err := b.RestoreShard(3, data)
	must(t, err)
	must(t, dst.Commit(b))
	if meta.GetApplied() != 42 {
		t.Fatalf("restored applied %d, want 42", meta.GetApplied())
	}
	if got, want := shardState(t, dst, 3), shardState(t, src, 3); !bytes.Equal(got, want) {
		t.Fatalf("restored shard 3 differs from its source")
	}
	if n := len(shardState(t, dst, 5)); n == 0 {
		t.Fatal("restoring shard 3 removed shard 5")
	}
	if _, err := b.RestoreShard(4, data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("shard 3's snapshot restored into shard 4: %v", err)
	}
	if _, err := b.RestoreShard(3, data[:len(data)-3]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated snapshot: %v", err)
	}
}

// shardState is a shard's state as one byte string.
func shardState(t *testing.T, s *Store, shard uint16) []byte {
	t.Helper()
	ss, err := s.SnapshotShard(shard)
	must(t, err)
	defer ss.Close()
	data, err := ss.Encode()
	must(t, err)
	return data[len(snapshotMagic)+2:]
}

// The system group's snapshot carries every client and session and its
// applied index, replaces the destination's, and leaves task shards
// alone.
func TestSystemSnapshotRoundTrip(t *testing.T) {
	src, dst := openStore(t, t.TempDir()), openStore(t, t.TempDir())
	fill := func(s *Store, prefix string, n int, applied uint64) {
		b := s.NewBatch()
		for i := range n {
			id := prefix + string(rune('a'+i))
			must(t, b.PutClient(&storepb.Client{Id: id, PasswordHash: []byte("h")}))
			must(t, b.PutSession([]byte("key-"+id), []byte("session of "+id)))
		}
		must(t, b.SetApplied(SystemShard, applied, 0))
		must(t, s.Commit(b))
	}
	fill(src, "src-", 5, 17)
	fill(dst, "dst-", 8, 3)
	b := dst.NewBatch()
	must(t, b.PutTask(&storepb.Task{Id: MakeID(2, 1), Client: "dst-a", DueMs: 1}))
	must(t, dst.Commit(b))

	ss, err := src.SnapshotShard(SystemShard)
	must(t, err)
	defer ss.Close()
	data, err := ss.Encode()
	must(t, err)
	b = dst.NewBatch()
	meta, err := b.RestoreShard(SystemShard, data)
	must(t, err)
	must(t, dst.Commit(b))
	if meta.GetApplied() != 17 {
		t.Fatalf("restored applied %d, want 17", meta.GetApplied())
	}
	if got, want := shardState(t, dst, SystemShard), shardState(t, src, SystemShard); !bytes.Equal(got, want) {
		t.Fatal("restored system state differs from its source")
	}
	clients, err := dst.ListClients()
	must(t, err)
	sessions := 0
	must(t, dst.ScanSessions(func(k, v []byte) error {
		if string(v) != "session of "+string(k[len("key-"):]) {
			t.Errorf("session %q holds %q", k, v)
		}
		sessions++
		return nil
	}))
	if len(clients) != 5 || sessions != 5 || clients[0].Id != "src-a" {
		t.Fatalf("after restore: %d clients (first %q), %d sessions; want src's 5 and 5", len(clients), clients[0].GetId(), sessions)
	}
	if _, err := dst.Task(MakeID(2, 1)); err != nil {
		t.Fatalf("restoring the system group touched a task shard: %v", err)
	}
}

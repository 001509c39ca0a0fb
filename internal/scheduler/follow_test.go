package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A followed shard's entries wait to be applied together, but never past
// a snapshot that replaces the shard's state: the snapshot holds them
// already, and applied after it they would take the state back.
func TestFollowerAppliesGatheredEntriesBeforeARestore(t *testing.T) {
	const shard = 3
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Placed: the node hosts no shard, so shard 3 is followed here. The
	// fake clock never lets the gathered entry's linger run out.
	s, err := New(Config{Store: st, Placed: true, Clock: newFakeClock(),
		Deliverer: DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())

	early := &storepb.Task{Id: store.MakeID(shard, 1), Seq: store.MakeID(shard, 1), Client: "acme", Payload: []byte("early"), DueMs: time.Hour.Milliseconds()}
	cmd := store.NewCommand(storepb.Op_OP_REGISTER)
	if err := cmd.PutTask(proto.CloneOf(early)); err != nil {
		t.Fatal(err)
	}
	s.Apply([]replica.Committed{{Shard: shard, Entries: []*raftpb.Entry{{
		Index: proto.Uint64(5), Term: proto.Uint64(1), Type: raftpb.EntryType_EntryNormal.Enum(),
		Data: store.AppendCommands(nil, []*store.Command{cmd}),
	}}}})

	// The snapshot, at index 9, holds another task and not the early one.
	other, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	later := &storepb.Task{Id: store.MakeID(shard, 2), Seq: store.MakeID(shard, 2), Client: "acme", Payload: []byte("later"), DueMs: time.Hour.Milliseconds()}
	b := other.NewBatch()
	if err := errors.Join(b.PutTask(later), b.SetApplied(shard, 9, later.Id), other.Commit(b)); err != nil {
		t.Fatal(err)
	}
	ss, err := other.SnapshotShard(shard)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ss.Encode()
	ss.Close()
	if err != nil {
		t.Fatal(err)
	}

	restored := make(chan error, 1)
	s.Restore(shard, func() error {
		b := st.NewBatch()
		_, err := b.RestoreShard(shard, data)
		if err == nil {
			err = st.Commit(b)
		}
		restored <- err
		return err
	})
	if err := <-restored; err != nil {
		t.Fatal(err)
	}
	// Stopping applies whatever is still gathered.
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Task(early.Id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the early task, which the snapshot replaced, is back: %v", err)
	}
	if _, err := st.Task(later.Id); err != nil {
		t.Errorf("the snapshot's task: %v", err)
	}
	if m, err := st.ShardMeta(shard); err != nil || m.GetApplied() != 9 {
		t.Errorf("applied index %d (%v), want the snapshot's 9", m.GetApplied(), err)
	}
}

// Nor past a shard's drop: applied after it, they would leave state of a
// shard the node no longer holds.
func TestFollowerAppliesGatheredEntriesBeforeADrop(t *testing.T) {
	const shard = 3
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Config{Store: st, Placed: true, Clock: newFakeClock(),
		Deliverer: DelivererFunc(func(_ Delivery, done func(error)) { done(nil) })})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())

	task := &storepb.Task{Id: store.MakeID(shard, 1), Seq: store.MakeID(shard, 1), Client: "acme", Payload: []byte("x"), DueMs: time.Hour.Milliseconds()}
	cmd := store.NewCommand(storepb.Op_OP_REGISTER)
	if err := cmd.PutTask(task); err != nil {
		t.Fatal(err)
	}
	s.Apply([]replica.Committed{{Shard: shard, Entries: []*raftpb.Entry{{
		Index: proto.Uint64(5), Term: proto.Uint64(1), Type: raftpb.EntryType_EntryNormal.Enum(),
		Data: store.AppendCommands(nil, []*store.Command{cmd}),
	}}}})
	dropped := make(chan error, 1)
	s.Drop(shard, func() error {
		b := st.NewBatch()
		err := b.DropShard(shard)
		if err == nil {
			err = st.Commit(b)
		}
		dropped <- err
		return err
	})
	if err := <-dropped; err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Task(task.Id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a task of the dropped shard is there: %v", err)
	}
	if m, err := st.ShardMeta(shard); err != nil || m.GetApplied() != 0 {
		t.Errorf("the dropped shard's applied index is %d (%v), want none", m.GetApplied(), err)
	}
}

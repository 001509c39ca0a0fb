package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Task returns the task with the given id.
func (s *Store) Task(id uint64) (*storepb.Task, error) {
	return readRecord(s, fmt.Sprintf("task %#x", id), taskKey(id), new(storepb.Task))
}

// Tasks reads the tasks with the given ids, which must be ascending, with
// one iterator: for many ids that is several times cheaper than a Task
// call for each. fn gets every id in order with its task, or nil if there
// is none.
func (s *Store) Tasks(ids []uint64, fn func(id uint64, t *storepb.Task)) error {
	return s.tasks(ids, func(id uint64, t *storepb.Task) {
		if t != nil {
			t.WrittenOnce = false
		}
		fn(id, t)
	})
}

// tasks is Tasks with the records as stored, written_once included.
func (s *Store) tasks(ids []uint64, fn func(id uint64, t *storepb.Task)) (err error) {
	if len(ids) == 0 {
		return nil
	}
	if !slices.IsSorted(ids) {
		return errors.New("store: Tasks needs ascending ids")
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	upper := taskKey(ids[len(ids)-1])
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: taskKey(ids[0]), UpperBound: append(upper, 0)})
	if err != nil {
		return readError("read tasks", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = readError("read tasks", cerr)
		}
	}()
	key := make([]byte, 0, len(upper))
	for _, id := range ids {
		key = binary.BigEndian.AppendUint64(appendShard(key[:0], tagTask, ShardOf(id)), id)
		if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
			if err := it.Error(); err != nil {
				return readError("read tasks", err)
			}
			fn(id, nil)
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return readError("read tasks", err)
		}
		t := new(storepb.Task)
		if err := proto.Unmarshal(v, t); err != nil {
			return corruptf("task %#x: %v", id, err)
		}
		fn(id, t)
	}
	return nil
}

// Group returns a group's state.
func (s *Store) Group(shard uint16, client, group string) (*storepb.Group, error) {
	what := fmt.Sprintf("group %q of client %q in shard %d", group, client, shard)
	return readRecord(s, what, groupKey(shard, client, group), new(storepb.Group))
}

// DeadLetter returns the dead letter stored under id (see DeadLetterID).
func (s *Store) DeadLetter(id uint64) (*storepb.DeadLetter, error) {
	return readRecord(s, fmt.Sprintf("dead letter %#x", id), deadLetterKey(id), new(storepb.DeadLetter))
}

// Client returns a registered client.
func (s *Store) Client(id string) (*storepb.Client, error) {
	return readRecord(s, fmt.Sprintf("client %q", id), clientKey(id), new(storepb.Client))
}

// ShardMeta returns a shard's high-water marks; a shard that never had
// any has the zero value.
func (s *Store) ShardMeta(shard uint16) (*storepb.ShardMeta, error) {
	m, err := readRecord(s, fmt.Sprintf("shard %d meta", shard), shardMetaKey(shard), new(storepb.ShardMeta))
	if errors.Is(err, ErrNotFound) {
		return new(storepb.ShardMeta), nil
	}
	return m, err
}

// readRecord reads one record under the gate; what names it in errors.
func readRecord[M proto.Message](s *Store, what string, key []byte, m M) (M, error) {
	var zero M
	if err := s.enter(); err != nil {
		return zero, err
	}
	defer s.gate.Exit()
	if err := getRecord(s.db, what, key, m); err != nil {
		return zero, err
	}
	return m, nil
}

// getRecord reads the record at key into m.
func getRecord(r pebble.Reader, what string, key []byte, m proto.Message) error {
	return get(r, what, key, func(v []byte) error { return unmarshal(what, v, m) })
}

// get passes the value at key to decode, which must not keep it.
func get(r pebble.Reader, what string, key []byte, decode func([]byte) error) error {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	if err != nil {
		return readError("read "+what, err)
	}
	defer closer.Close()
	return decode(v)
}

// unmarshal decodes a record. proto.Unmarshal copies what it keeps, so the
// caller may reuse v afterwards.
// unmarshal decodes a record for a reader. A task's written_once is the
// store's own bookkeeping, not part of what was put, so readers never see
// it; applying a command reads it with unmarshalStored.
func unmarshal(what string, v []byte, m proto.Message) error {
	if err := unmarshalStored(what, v, m); err != nil {
		return err
	}
	if t, ok := m.(*storepb.Task); ok {
		t.WrittenOnce = false
	}
	return nil
}

func unmarshalStored(what string, v []byte, m proto.Message) error {
	if err := proto.Unmarshal(v, m); err != nil {
		return corruptf("%s: %v", what, err)
	}
	return nil
}

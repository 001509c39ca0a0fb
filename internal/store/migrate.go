package store

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// migrateV1 upgrades a schema 1 store in place. Schema 2 added the group
// order index, due index entries that name an ordered task's group and
// fall at its wake time, group task counts, idempotency keys that keep
// their creation time, and dead letter index entries that keep the
// failure time. Each step only rewrites what the records imply, so a
// migration cut short by a crash is simply run again; the new version is
// written last.
//
// Schema 1 kept a group's sequence as a counter of its own and ran tasks
// of equal due time in id order; the migrated tasks take their id as
// their sequence, which keeps that order.
func (s *Store) migrateV1(log *slog.Logger) error {
	begin := time.Now()
	log.Info("migrating the store from schema 1", "to", SchemaVersion, "dir", s.dir)
	m := &migration{s: s, b: s.NewBatch(), counts: map[string]uint64{}}
	steps := []func() error{m.tasks, m.groups, m.idempotency, m.deadLetters}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("store: migrate %s from schema 1: %w", s.dir, err)
		}
	}
	if err := m.flush(); err != nil {
		return err
	}
	if err := s.db.Set(schemaKey, binary.AppendUvarint(nil, SchemaVersion), pebble.Sync); err != nil {
		return fmt.Errorf("store: write schema version: %w", err)
	}
	log.Info("migrated the store", "schema", SchemaVersion, "tasks", m.tasksSeen, "took", time.Since(begin).Round(time.Millisecond))
	return nil
}

// migrateV2 upgrades a schema 2 store: schema 3 added the replace key
// index, which no schema 2 task needs, so only the version changes.
func (s *Store) migrateV2() error {
	if err := s.db.Set(schemaKey, binary.AppendUvarint(nil, SchemaVersion), pebble.Sync); err != nil {
		return fmt.Errorf("store: write schema version: %w", err)
	}
	return nil
}

type migration struct {
	s         *Store
	b         *Batch
	counts    map[string]uint64 // tasks per group, by groupKey
	tasksSeen int
}

// flush commits the batch once it is big, and at the end.
func (m *migration) flush() error {
	if m.b.Count() == 0 {
		return nil
	}
	if err := m.s.Commit(m.b); err != nil {
		return err
	}
	m.b.Reset()
	return nil
}

func (m *migration) maybeFlush() error {
	if m.b.Count() < 10_000 {
		return nil
	}
	return m.flush()
}

// tasks rewrites every task with its sequence and schema 2 index entries,
// and counts each group's tasks.
func (m *migration) tasks() error {
	return scanSpace(m.s.db, tagTask, func(k, v []byte) error {
		t := new(storepb.Task)
		if err := unmarshal(fmt.Sprintf("task at key %x", k), v, t); err != nil {
			return err
		}
		m.b.delete(dueKey(t.DueMs, t.Id)) // schema 1's entry, if it differs
		if t.Group != "" {
			t.Seq = t.Id
			m.counts[string(groupKey(ShardOf(t.Id), t.Client, t.Group))]++
		}
		if err := m.b.PutTask(t); err != nil {
			return err
		}
		m.tasksSeen++
		return m.maybeFlush()
	})
}

// groups sets each group's task count and drops groups with nothing left
// to remember.
func (m *migration) groups() error {
	return scanSpace(m.s.db, tagGroup, func(k, v []byte) error {
		g := new(storepb.Group)
		if err := unmarshal(fmt.Sprintf("group at key %x", k), v, g); err != nil {
			return err
		}
		g.ProtoReflect().SetUnknown(nil) // schema 1's next sequence
		g.Tasks = m.counts[string(k)]
		var err error
		if g.Tasks == 0 && g.BlockedTask == 0 {
			err = m.b.DeleteGroup(uint16(g.Shard), g.Client, g.Group)
		} else {
			err = m.b.PutGroup(g)
		}
		if err != nil {
			return err
		}
		return m.maybeFlush()
	})
}

// idempotency files every key, stamped with the migration's time, for
// expiry.
func (m *migration) idempotency() error {
	now := time.Now().UnixMilli()
	return scanSpace(m.s.db, tagIdempotency, func(k, v []byte) error {
		if len(v) != 8 {
			return nil // already migrated
		}
		p, err := decodeKey(k)
		if err != nil {
			return corruptf("idempotency key %x: %v", k, err)
		}
		if err := m.b.PutIdempotency(p.shard, p.a, p.b, binary.BigEndian.Uint64(v), now); err != nil {
			return err
		}
		return m.maybeFlush()
	})
}

// deadLetters rewrites every dead letter's index entry with its failure
// time and blocking flag.
func (m *migration) deadLetters() error {
	return scanSpace(m.s.db, tagDeadLetter, func(k, v []byte) error {
		d := new(storepb.DeadLetter)
		if err := unmarshal(fmt.Sprintf("dead letter at key %x", k), v, d); err != nil {
			return err
		}
		if err := m.b.PutDeadLetter(proto.CloneOf(d)); err != nil {
			return err
		}
		return m.maybeFlush()
	})
}

// scanSpace scans one key space of every shard from a snapshot, so that
// the scan does not see the migration's own writes.
func scanSpace(db *pebble.DB, tag byte, fn func(k, v []byte) error) error {
	snap := db.NewSnapshot()
	defer snap.Close()
	return scan(snap, []byte{tag}, []byte{tag + 1}, fn)
}

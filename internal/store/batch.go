package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Batch collects changes that Commit applies atomically. Each method
// writes a record together with every index entry that belongs to it, so
// indexes never disagree with records. A Batch is not safe for concurrent
// use; it can be reused after Reset.
//
// Methods do not return errors: the first invalid operation is remembered
// and Commit refuses the whole batch with it, so a bad record is never half
// applied.
type Batch struct {
	s         *Store
	pb        *pebble.Batch
	count     int
	err       error
	committed bool
	spent     bool   // a commit failed; Pebble will not take this batch again
	buf       []byte // scratch for marshaling
}

// NewBatch returns an empty batch for s.
func (s *Store) NewBatch() *Batch {
	return &Batch{s: s, pb: s.db.NewBatch()}
}

// Count returns the number of operations added since the last Reset.
func (b *Batch) Count() int { return b.count }

// Reset empties the batch for reuse.
func (b *Batch) Reset() {
	if b.spent {
		b.pb = b.s.db.NewBatch()
	} else {
		b.pb.Reset()
	}
	b.count, b.err, b.committed, b.spent = 0, nil, false, false
}

// PutTask writes a new task: its record, its due index entry and its
// client index entry. To change a stored task use ReplaceTask, which also
// moves its index entries.
func (b *Batch) PutTask(t *storepb.Task) {
	if !b.begin() || !b.checkTask(t) {
		return
	}
	b.setRecord(taskKey(t.Id), t)
	b.set(dueKey(t.DueMs, t.Id), nil)
	b.set(clientIndexKey(tagClientIndex, t.Client, t.Id), nil)
}

// ReplaceTask overwrites the record of old (as stored) with updated, the
// same task, and moves its index entries if the due time or client
// changed.
func (b *Batch) ReplaceTask(old, updated *storepb.Task) {
	if !b.begin() || !b.checkTask(old) || !b.checkTask(updated) {
		return
	}
	if old.Id != updated.Id {
		b.invalid("ReplaceTask of task %#x with task %#x", old.Id, updated.Id)
		return
	}
	b.setRecord(taskKey(updated.Id), updated)
	if old.DueMs != updated.DueMs {
		b.delete(dueKey(old.DueMs, old.Id))
		b.set(dueKey(updated.DueMs, updated.Id), nil)
	}
	if old.Client != updated.Client {
		b.delete(clientIndexKey(tagClientIndex, old.Client, old.Id))
		b.set(clientIndexKey(tagClientIndex, updated.Client, updated.Id), nil)
	}
}

// DeleteTask removes the record of t (as stored) and its index entries.
func (b *Batch) DeleteTask(t *storepb.Task) {
	if !b.begin() || !b.checkTask(t) {
		return
	}
	b.delete(taskKey(t.Id))
	b.delete(dueKey(t.DueMs, t.Id))
	b.delete(clientIndexKey(tagClientIndex, t.Client, t.Id))
}

// PutGroup writes a group's state under g.Shard, which callers take from
// GroupShard.
func (b *Batch) PutGroup(g *storepb.Group) {
	if !b.begin() {
		return
	}
	if g == nil || !b.checkShard(g.Shard) {
		b.invalid("PutGroup(%v)", g)
		return
	}
	shard := uint16(g.Shard)
	b.setRecord(groupKey(shard, g.Client, g.Group), g)
	if g.BlockedTask != 0 {
		b.set(blockedKey(shard, g.Client, g.Group), nil)
	} else {
		b.delete(blockedKey(shard, g.Client, g.Group))
	}
}

// DeleteGroup removes a group's state.
func (b *Batch) DeleteGroup(shard uint16, client, group string) {
	if !b.begin() || !b.checkShard(uint32(shard)) {
		return
	}
	b.delete(groupKey(shard, client, group))
	b.delete(blockedKey(shard, client, group))
}

// PutDeadLetter writes a dead letter under its id (DeadLetterID), with an
// entry in the per-client dead letter index.
func (b *Batch) PutDeadLetter(d *storepb.DeadLetter) {
	if !b.begin() || !b.checkDeadLetter(d) {
		return
	}
	id := DeadLetterID(d)
	b.setRecord(deadLetterKey(id), d)
	b.set(clientIndexKey(tagDeadClient, d.Task.Client, id), nil)
}

// DeleteDeadLetter removes a dead letter (as stored) and its index entry.
func (b *Batch) DeleteDeadLetter(d *storepb.DeadLetter) {
	if !b.begin() || !b.checkDeadLetter(d) {
		return
	}
	id := DeadLetterID(d)
	b.delete(deadLetterKey(id))
	b.delete(clientIndexKey(tagDeadClient, d.Task.Client, id))
}

// DeadLetterID is the id a dead letter is stored under: its own Id, which
// lets a recurring task dead-letter several occurrences, or its task's id
// when Id is 0. Either way it is in the task's shard.
func DeadLetterID(d *storepb.DeadLetter) uint64 {
	if d.GetId() != 0 {
		return d.GetId()
	}
	return d.GetTask().GetId()
}

// PutIdempotency remembers that a client's idempotency key created task id.
func (b *Batch) PutIdempotency(shard uint16, client, key string, id uint64) {
	if !b.begin() || !b.checkShard(uint32(shard)) {
		return
	}
	if id == 0 {
		b.invalid("PutIdempotency(%q, %q) with task id 0", client, key)
		return
	}
	b.set(idempotencyKey(shard, client, key), binary.BigEndian.AppendUint64(b.buf[:0], id))
}

// DeleteIdempotency forgets an idempotency key.
func (b *Batch) DeleteIdempotency(shard uint16, client, key string) {
	if !b.begin() || !b.checkShard(uint32(shard)) {
		return
	}
	b.delete(idempotencyKey(shard, client, key))
}

// PutShardMeta writes a shard's high-water marks. Writing it in the same
// batch as the changes it covers keeps it exact after a crash.
func (b *Batch) PutShardMeta(shard uint16, m *storepb.ShardMeta) {
	if !b.begin() || !b.checkShard(uint32(shard)) {
		return
	}
	if m == nil {
		b.invalid("PutShardMeta(%d, nil)", shard)
		return
	}
	b.setRecord(shardMetaKey(shard), m)
}

// PutClient writes a registered client.
func (b *Batch) PutClient(c *storepb.Client) {
	if !b.begin() {
		return
	}
	if c.GetId() == "" {
		b.invalid("PutClient without an id")
		return
	}
	b.setRecord(clientKey(c.Id), c)
}

// DeleteClient removes a registered client. Its tasks, groups and dead
// letters are the caller's to remove.
func (b *Batch) DeleteClient(id string) {
	if !b.begin() {
		return
	}
	b.delete(clientKey(id))
}

// begin counts an operation and reports whether the batch is still valid.
func (b *Batch) begin() bool {
	b.count++
	return b.err == nil
}

func (b *Batch) checkTask(t *storepb.Task) bool {
	switch {
	case t == nil:
		b.invalid("nil task")
	case t.Id == 0:
		b.invalid("task id 0")
	case ShardOf(t.Id) >= Shards:
		b.invalid("task id %#x has shard %d >= %d", t.Id, ShardOf(t.Id), Shards)
	default:
		return true
	}
	return false
}

func (b *Batch) checkDeadLetter(d *storepb.DeadLetter) bool {
	if !b.checkTask(d.GetTask()) {
		return false
	}
	if d.Id != 0 && ShardOf(d.Id) != ShardOf(d.Task.Id) {
		b.invalid("dead letter %#x is not in the shard of its task %#x", d.Id, d.Task.Id)
		return false
	}
	return true
}

func (b *Batch) checkShard(shard uint32) bool {
	if shard >= Shards {
		b.invalid("shard %d >= %d", shard, Shards)
		return false
	}
	return true
}

func (b *Batch) invalid(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
}

func (b *Batch) setRecord(key []byte, m proto.Message) {
	var err error
	b.buf, err = proto.MarshalOptions{}.MarshalAppend(b.buf[:0], m)
	if err != nil {
		b.invalid("encode %T: %v", m, err)
		return
	}
	b.set(key, b.buf)
}

// set and delete copy key and value into the batch, so callers may reuse
// them.
func (b *Batch) set(key, value []byte) {
	if b.err == nil {
		b.err = b.pb.Set(key, value, nil)
	}
}

func (b *Batch) delete(key []byte) {
	if b.err == nil {
		b.err = b.pb.Delete(key, nil)
	}
}

// Commit applies b atomically and returns once it is synced to disk; only
// then may the change be acknowledged. Concurrent commits share fsyncs:
// Pebble's commit pipeline writes every batch that arrives while an fsync
// is in progress to the WAL and covers all of them with the next fsync.
//
// An empty batch is a no-op. After Commit, Reset the batch to reuse it.
func (s *Store) Commit(b *Batch) error { return s.commit(b, pebble.Sync) }

// CommitNoSync applies b atomically without waiting for an fsync: it is
// for changes whose loss in a machine crash only repeats work, never
// loses acknowledged work (a delivery outcome: the delivery happens
// again). Pebble's write-ahead log is sequential, so a later Commit makes
// b durable too, and whatever survives a crash is a prefix of the
// commits. The write reaches the log asynchronously, so even a process
// crash may lose the last few.
func (s *Store) CommitNoSync(b *Batch) error { return s.commit(b, pebble.NoSync) }

// CommitAsync is Commit in two halves, for a single goroutine that
// commits batches in order and wants the next one in the log while the
// last one syncs: it applies b and returns once the change is in the
// log, with the fsync under way; wait returns once b is synced, and only
// then may the change be acknowledged. Batches are durable in the order
// CommitAsync was called. wait must be called exactly once.
func (s *Store) CommitAsync(b *Batch) (wait func() error, err error) {
	if err := s.checkCommit(b); err != nil || b.count == 0 {
		return func() error { return err }, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	if err := s.apply(b, func() error { return s.db.ApplyNoSyncWait(b.pb, pebble.Sync) }); err != nil {
		s.gate.Exit()
		return nil, err
	}
	return func() error {
		defer s.gate.Exit()
		if err := b.pb.SyncWait(); err != nil {
			err = fmt.Errorf("%w: commit: %w", ErrFailed, err)
			b.spent = true
			s.fail(err)
			return err
		}
		s.counted(b, true)
		return nil
	}, nil
}

func (s *Store) commit(b *Batch, opts *pebble.WriteOptions) error {
	if err := s.checkCommit(b); err != nil || b.count == 0 {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	if err := s.apply(b, func() error { return s.db.Apply(b.pb, opts) }); err != nil {
		return err
	}
	s.counted(b, opts.Sync)
	return nil
}

func (s *Store) checkCommit(b *Batch) error {
	switch {
	case b.err != nil:
		return b.err
	case b.s != s:
		return errors.New("store: batch belongs to another store")
	case b.committed:
		return errors.New("store: batch already committed; Reset it to reuse it")
	}
	return nil
}

// apply runs a Pebble apply, turning its fatal errors into ErrFailed,
// which fails the store.
func (s *Store) apply(b *Batch, apply func() error) (err error) {
	defer func() {
		if err != nil {
			b.spent = true
			if errors.Is(err, ErrFailed) {
				s.fail(err)
			}
		}
	}()
	defer recoverFatal(&err)
	if err := apply(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

func (s *Store) counted(b *Batch, synced bool) {
	b.committed = true
	if synced {
		s.c.syncedCommits.Add(1)
	}
	s.c.commits.Add(1)
	s.c.commitOps.Add(uint64(b.count))
}

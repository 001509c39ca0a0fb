package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Batch collects changes that Commit applies atomically. Each method
// writes a record together with every index entry that belongs to it, so
// indexes never disagree with records. A Batch is not safe for concurrent
// use; it can be reused after Reset.
//
// Each method either adds the whole of its operation or, returning an
// error, nothing: a record that cannot be stored (one that does not
// encode, an id outside every shard) fails only its own operation, never
// the rest of the batch. The errors wrap ErrInvalid.
type Batch struct {
	s         *Store
	pb        *pebble.Batch
	count     int
	err       error // the Pebble batch broke; Commit refuses it
	committed bool
	spent     bool         // a commit failed; Pebble will not take this batch again
	rec       []byte       // the record being written
	buf       []byte       // scratch for small values
	keys      []byte       // scratch for an operation's index keys (keyScratch)
	state     *stateWrites // a state batch's (NewStateBatch); nil otherwise
	orders    []orderWrite // order entries written and deleted, for the group floors
	rewrites  bool         // whole ranges of state replaced: floors are void
	idems     []idemWrite  // idempotency keys written and deleted (idem.go)
	rewritten []uint16     // shards whose state is replaced: their idempotency keys reload
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
	b.orders, b.rewrites = b.orders[:0], false
	b.idems, b.rewritten = b.idems[:0], b.rewritten[:0]
	b.state.reset()
}

// Ordered reports whether t takes part in its group's order: a grouped
// task in any mode but IMMEDIATE. Such a task has an entry in its group's
// order index, and its due index entry names its group.
func Ordered(t *storepb.Task) bool {
	return t.Group != "" && t.Mode != storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
}

// WakeMs is when a task next needs attention, the time of its due index
// entry: its due time, or, for a task in no group order, its next
// attempt's when one is set and later. An ordered task that waits for a
// retry holds its group from its due time on, so its group must look at
// it then.
func WakeMs(t *storepb.Task) int64 { return keysOf(t).wake() }

// GroupRef names a client's group in one string: the value of an ordered
// task's due index entry (DueEntry.Group). Client ids and group keys
// never hold a NUL byte, so it is unambiguous.
func GroupRef(client, group string) string { return client + "\x00" + group }

// PutTask writes a new task: its record and its index entries. To change
// a stored task use ReplaceTask, which also moves its index entries.
func (b *Batch) PutTask(t *storepb.Task) error {
	if err := b.encodeTask(t); err != nil {
		return err
	}
	return b.putTask(keysOf(t), knownTask{t: t, once: true}, b.rec)
}

// putEncodedTask is PutTask of a task as a log entry encodes it.
func (b *Batch) putEncodedTask(e *encodedTask) error {
	if err := checkTaskID(e.keys.id); err != nil {
		return err
	}
	if err := b.checkShard(uint32(ShardOf(e.keys.id))); err != nil {
		return err
	}
	return b.putTask(e.keys, knownTask{enc: e.enc, once: true}, e.enc)
}

// putTask writes a new task's record, enc, marked written once, and its
// index entries.
func (b *Batch) putTask(k taskKeys, known knownTask, enc []byte) error {
	b.state.wroteTask(k.id, known)
	var mark [4]byte
	once := markWrittenOnce(mark[:0], true)
	if b.state != nil { // the record and its mark copied once, into the held writes
		b.state.hold(writeSet, taskKey(k.id), enc, once)
	} else {
		b.set(taskKey(k.id), append(append(b.rec[:0], enc...), once...))
	}
	b.putTaskIndexes(k)
	return b.done()
}

// ReplaceTask overwrites the record of old (as stored) with updated, the
// same task, and moves its index entries if what they hold changed.
func (b *Batch) ReplaceTask(old, updated *storepb.Task) error {
	if err := b.checkTask(old); err != nil {
		return err
	}
	if err := b.encodeTask(updated); err != nil {
		return err
	}
	if old.Id != updated.Id {
		return invalidf("ReplaceTask of task %#x with task %#x", old.Id, updated.Id)
	}
	b.state.wroteTask(updated.Id, knownTask{t: updated})
	b.set(taskKey(updated.Id), markWrittenOnce(b.rec, false))
	b.moveTaskIndexes(old, updated)
	return b.done()
}

// DeleteTask removes the record of t (as stored) and its index entries.
func (b *Batch) DeleteTask(t *storepb.Task) error { return b.deleteTask(t, t.GetWrittenOnce()) }

// deleteTask is DeleteTask of a record whose written_once is once.
func (b *Batch) deleteTask(t *storepb.Task, once bool) error {
	if err := b.checkTask(t); err != nil {
		return err
	}
	b.state.wroteTask(t.Id, knownTask{})
	if once {
		b.singleDelete(taskKey(t.Id))
	} else {
		b.delete(taskKey(t.Id))
	}
	b.deleteTaskIndexes(t)
	return b.done()
}

// markWrittenOnce sets the encoded task's written_once field: a field
// appended to an encoding overrides an earlier one.
func markWrittenOnce(rec []byte, once bool) []byte {
	rec = protowire.AppendTag(rec, writtenOnceField, protowire.VarintType)
	return protowire.AppendVarint(rec, protowire.EncodeBool(once))
}

const writtenOnceField = 18 // storepb.Task.written_once

// indexEntry is one of a task's index entries; a nil key: none.
type indexEntry struct {
	key, value []byte
	order      bool // an entry of its group's order (floors)
}

// taskKeys is what of a task its index entries are made of.
type taskKeys struct {
	id, seq          uint64
	client, group    string
	due, nextAttempt int64
	ordered          bool // Ordered
	replaceKey       string
}

func keysOf(t *storepb.Task) taskKeys {
	return taskKeys{id: t.Id, seq: t.Seq, client: t.Client, group: t.Group, due: t.DueMs,
		nextAttempt: t.NextAttemptMs, ordered: Ordered(t), replaceKey: t.ReplaceKey}
}

// wake is WakeMs.
func (k taskKeys) wake() int64 {
	if k.nextAttempt != 0 && k.nextAttempt > k.due && !k.ordered {
		return k.nextAttempt
	}
	return k.due
}

// taskIndexes returns a task's index entries: due, group order, client,
// replace key. The due and client keys are appended to *scratch (the
// writes copy their keys); the others, which orders may keep, are not.
func taskIndexes(k taskKeys, scratch *[]byte) [4]indexEntry {
	var e [4]indexEntry
	start := len(*scratch)
	*scratch = appendDueKey(*scratch, k.wake(), k.id)
	e[0].key = since(*scratch, start)
	if k.ordered {
		e[0].value = []byte(GroupRef(k.client, k.group))
		e[1] = indexEntry{key: orderKey(ShardOf(k.id), k.client, k.group, k.due, k.seq, k.id), order: true}
	}
	start = len(*scratch)
	*scratch = appendClientIndexKey(*scratch, tagClientIndex, k.client, k.id)
	e[2].key = since(*scratch, start)
	if k.replaceKey != "" {
		e[3].key = replaceKey(ShardOf(k.id), k.client, k.group, k.replaceKey, k.id)
	}
	return e
}

// since returns what b holds from start on, capped so that nothing
// appended to it reaches past it. A key taken so stays as it was when b
// grows later: it keeps the old array.
func since(b []byte, start int) []byte { return b[start:len(b):len(b)] }

func (b *Batch) putTaskIndexes(k taskKeys) {
	for _, e := range taskIndexes(k, b.keyScratch()) {
		b.putEntry(e)
	}
}

// deleteTaskIndexes removes a task's index entries with single deletes:
// each entry is written once between deletions, since it is only written
// for a new task or after its old entries were removed.
func (b *Batch) deleteTaskIndexes(t *storepb.Task) {
	for _, e := range taskIndexes(keysOf(t), b.keyScratch()) {
		b.deleteEntry(e)
	}
}

// keyScratch empties the batch's scratch for keys, which the keys of
// the last operation held, and returns it.
func (b *Batch) keyScratch() *[]byte {
	b.keys = b.keys[:0]
	return &b.keys
}

// moveTaskIndexes moves the index entries of a task replaced by updated
// whose key or value changed; one the same in both stays as it is, still
// written once. A release of a held task, for one, moves its due and
// order entries and leaves its client entry alone.
func (b *Batch) moveTaskIndexes(old, updated *storepb.Task) {
	scratch := b.keyScratch()
	was, now := taskIndexes(keysOf(old), scratch), taskIndexes(keysOf(updated), scratch)
	for i := range was {
		if bytes.Equal(was[i].key, now[i].key) && bytes.Equal(was[i].value, now[i].value) {
			continue
		}
		b.deleteEntry(was[i])
		b.putEntry(now[i])
	}
}

func (b *Batch) putEntry(e indexEntry) {
	if e.key == nil {
		return
	}
	b.set(e.key, e.value)
	if e.order {
		b.orders = append(b.orders, orderWrite{key: e.key})
	}
}

func (b *Batch) deleteEntry(e indexEntry) {
	if e.key == nil {
		return
	}
	b.singleDelete(e.key)
	if e.order {
		b.orders = append(b.orders, orderWrite{key: e.key, deleted: true})
	}
}

// PutGroup writes a group's state under g.Shard, which callers take from
// GroupShard, and files a blocked group in the index of blocked groups.
// A group that stops being blocked leaves that index by UnblockGroup:
// PutGroup does not remove it there, so that the many writes of a group
// that was not blocked before cost no deletion each.
func (b *Batch) PutGroup(g *storepb.Group) error {
	if g == nil {
		return invalidf("PutGroup(nil)")
	}
	if err := b.checkShard(g.Shard); err != nil {
		return err
	}
	if err := b.encode(g); err != nil {
		return err
	}
	return b.putGroup(uint16(g.Shard), g.Client, g.Group, g.BlockedTask != 0, b.rec)
}

// putEncodedGroup is PutGroup of a group as a log entry encodes it.
func (b *Batch) putEncodedGroup(g *encodedGroup) error {
	if err := b.checkShard(g.shard); err != nil {
		return err
	}
	return b.putGroup(uint16(g.shard), g.client, g.group, g.blocked, g.enc)
}

// putGroup writes a group's record, enc, and files a blocked one in the
// index of blocked groups.
func (b *Batch) putGroup(shard uint16, client, group string, blocked bool, enc []byte) error {
	b.set(groupKey(shard, client, group), enc)
	if blocked {
		b.set(blockedKey(shard, client, group), nil)
	}
	return b.done()
}

// UnblockGroup removes a group from the index of blocked groups.
func (b *Batch) UnblockGroup(shard uint16, client, group string) error {
	if err := b.checkShard(uint32(shard)); err != nil {
		return err
	}
	b.delete(blockedKey(shard, client, group))
	return b.done()
}

// DeleteGroup removes a group's state. A blocked group must leave the
// index of blocked groups first (UnblockGroup).
func (b *Batch) DeleteGroup(shard uint16, client, group string) error {
	if err := b.checkShard(uint32(shard)); err != nil {
		return err
	}
	b.delete(groupKey(shard, client, group))
	return b.done()
}

// PutDeadLetter writes a dead letter under its id (DeadLetterID), with an
// entry in the per-client dead letter index that holds its failure time
// and whether it blocks its group, so that sweeps need not read records.
func (b *Batch) PutDeadLetter(d *storepb.DeadLetter) error {
	if err := b.checkDeadLetter(d); err != nil {
		return err
	}
	if err := b.encode(d); err != nil {
		return err
	}
	id := DeadLetterID(d)
	b.state.wroteDeadLetter(id, d)
	b.set(deadLetterKey(id), b.rec)
	b.set(clientIndexKey(tagDeadClient, d.Task.Client, id), deadIndexValue(b.buf[:0], d))
	return b.done()
}

// DeleteDeadLetter removes a dead letter (as stored) and its index entry.
func (b *Batch) DeleteDeadLetter(d *storepb.DeadLetter) error {
	if err := b.checkDeadLetter(d); err != nil {
		return err
	}
	id := DeadLetterID(d)
	b.state.wroteDeadLetter(id, nil)
	b.delete(deadLetterKey(id))
	b.delete(clientIndexKey(tagDeadClient, d.Task.Client, id))
	return b.done()
}

// deadIndexValue is a dead letter index entry's value: the failure time,
// 8 bytes, then 1 if it blocks its group, else 0.
func deadIndexValue(v []byte, d *storepb.DeadLetter) []byte {
	v = binary.BigEndian.AppendUint64(v, uint64(d.FailedMs))
	if d.BlocksGroup {
		return append(v, 1)
	}
	return append(v, 0)
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

// PutIdempotency remembers that a client's idempotency key created task
// id at createdMs (Unix ms), and files the key under that time for expiry.
func (b *Batch) PutIdempotency(shard uint16, client, key string, id uint64, createdMs int64) error {
	if err := b.checkShard(uint32(shard)); err != nil {
		return err
	}
	if id == 0 {
		return invalidf("PutIdempotency(%q, %q) with task id 0", client, key)
	}
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(b.buf[:0], id), uint64(createdMs))
	k := idempotencyKey(shard, client, key)
	b.set(k, v)
	b.set(idemExpiryKey(shard, createdMs, client, key), nil)
	return b.idemDone(shard, k, false)
}

// DeleteIdempotency forgets an idempotency key filed at createdMs.
func (b *Batch) DeleteIdempotency(shard uint16, client, key string, createdMs int64) error {
	if err := b.checkShard(uint32(shard)); err != nil {
		return err
	}
	k := idempotencyKey(shard, client, key)
	b.delete(k)
	b.delete(idemExpiryKey(shard, createdMs, client, key))
	return b.idemDone(shard, k, true)
}

// idemDone ends an operation on an idempotency key and, if it was added,
// notes it for the store's set of keys.
func (b *Batch) idemDone(shard uint16, key []byte, deleted bool) error {
	if err := b.done(); err != nil {
		return err
	}
	b.idems = append(b.idems, idemWrite{shard: shard, hash: b.s.idem.hash(key), deleted: deleted})
	return nil
}

// PutShardMeta writes a shard's high-water marks.
func (b *Batch) PutShardMeta(shard uint16, m *storepb.ShardMeta) error {
	if shard != SystemShard { // whose meta holds only its applied index
		if err := b.checkShard(uint32(shard)); err != nil {
			return err
		}
	}
	if m == nil {
		return invalidf("PutShardMeta(%d, nil)", shard)
	}
	if err := b.encode(m); err != nil {
		return err
	}
	b.set(shardMetaKey(shard), b.rec)
	return b.done()
}

// PutClient writes a registered client.
func (b *Batch) PutClient(c *storepb.Client) error {
	if c.GetId() == "" {
		return invalidf("PutClient without an id")
	}
	if err := b.encode(c); err != nil {
		return err
	}
	b.set(clientKey(c.Id), b.rec)
	return b.done()
}

// DeleteClient removes a registered client. Its tasks, groups and dead
// letters are the caller's to remove.
func (b *Batch) DeleteClient(id string) error {
	b.delete(clientKey(id))
	return b.done()
}

// done counts a finished operation, or reports that the Pebble batch
// broke under it.
func (b *Batch) done() error {
	if b.err != nil {
		return b.err
	}
	b.count++
	return nil
}

func (b *Batch) checkTask(t *storepb.Task) error {
	if err := checkTaskRecord(t); err != nil {
		return err
	}
	return b.checkShard(uint32(ShardOf(t.Id)))
}

// encodeTask checks t and encodes it into b.rec.
func (b *Batch) encodeTask(t *storepb.Task) error {
	if err := b.checkTask(t); err != nil {
		return err
	}
	return b.encode(t)
}

func (b *Batch) checkDeadLetter(d *storepb.DeadLetter) error {
	if err := checkDeadLetterRecord(d); err != nil {
		return err
	}
	return b.checkShard(uint32(ShardOf(d.Task.Id)))
}

// checkShard refuses a shard the store does not have.
func (b *Batch) checkShard(shard uint32) error {
	if int(shard) >= b.s.shards {
		return invalidf("shard %d >= %d", shard, b.s.shards)
	}
	return nil
}

func checkShard(shard uint32) error {
	if shard >= MaxShards {
		return invalidf("shard %d >= %d", shard, MaxShards)
	}
	return nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// encode marshals m into b.rec. Strings must be valid UTF-8.
func (b *Batch) encode(m proto.Message) error {
	var err error
	b.rec, err = proto.MarshalOptions{}.MarshalAppend(b.rec[:0], m)
	if err != nil {
		return invalidf("encode %T: %v", m, err)
	}
	return nil
}

// set and delete copy key and value into the batch, so callers may reuse
// them.
func (b *Batch) set(key, value []byte) {
	if b.state != nil {
		b.state.hold(writeSet, key, value)
	} else if b.err == nil {
		b.err = b.pb.Set(key, value, nil)
	}
}

func (b *Batch) delete(key []byte) {
	if b.state != nil {
		b.state.hold(writeDelete, key, nil)
	} else if b.err == nil {
		b.err = b.pb.Delete(key, nil)
	}
}

// singleDelete deletes a key that was set once since it was last deleted
// (or ever): the deletion and the write then both vanish when a flush or
// compaction meets them, leaving nothing behind. For a key set more than
// once it would let an older value reappear.
func (b *Batch) singleDelete(key []byte) {
	if b.state != nil {
		b.state.hold(writeSingleDelete, key, nil)
	} else if b.err == nil {
		b.err = b.pb.SingleDelete(key, nil)
	}
}

// Commit applies b atomically and returns once it is synced to disk; only
// then may the change be acknowledged. Concurrent commits share fsyncs:
// Pebble's commit pipeline writes every batch that arrives while an fsync
// is in progress to the WAL and covers all of them with the next fsync.
//
// An empty batch is a no-op. After Commit, Reset the batch to reuse it.
func (s *Store) Commit(b *Batch) error { return s.commit(b, pebble.Sync) }

// CommitNoSync applies b atomically without waiting for an fsync: for
// changes that may be lost in a machine crash (tests and tools; the
// scheduler syncs everything). Pebble's write-ahead log is sequential, so
// a later Commit makes b durable too, and whatever survives a crash is a
// prefix of the commits.
func (s *Store) CommitNoSync(b *Batch) error { return s.commit(b, pebble.NoSync) }

// CommitAsync is Commit in two halves, for a single goroutine that
// commits batches in order and wants the next one in the log while the
// last one syncs: it applies b and returns once the change is in the
// log, with the fsync under way; wait returns once b is synced, and only
// then may the change be acknowledged. Batches are durable in the order
// CommitAsync was called. wait must be called exactly once.
//
// Reads may see b before wait returns: a power loss can still undo what
// they saw.
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

// Sync makes every commit so far durable, as a synced Commit would.
func (s *Store) Sync() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	var err error
	func() {
		defer recoverFatal(&err)
		err = s.db.LogData(nil, pebble.Sync)
	}()
	if err != nil {
		err = fmt.Errorf("%w: sync: %w", ErrFailed, err)
		s.fail(err)
	}
	return err
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

// applyIdem runs apply, a commit of b, keeping the store's set of
// idempotency keys a superset of Pebble's (idem.go).
func (s *Store) applyIdem(b *Batch, apply func() error) error {
	s.idem.written(b.idems, b.rewritten, true)
	if len(b.rewritten) > 0 {
		unlock := s.idem.lock(b.rewritten)
		defer unlock()
	}
	if err := apply(); err != nil {
		return err
	}
	if err := s.idem.reload(s.db, b.rewritten); err != nil {
		return err
	}
	s.idem.written(b.idems, b.rewritten, false)
	return nil
}

func (s *Store) checkCommit(b *Batch) error {
	if b.err == nil && !b.committed {
		b.err = b.state.release(b.pb)
	}
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
	if err := s.applyIdem(b, apply); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	// Reads see b now: the group floors must not hide its order entries.
	if b.rewrites {
		s.floors.reset()
	} else if len(b.orders) > 0 {
		s.floors.written(b.orders)
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

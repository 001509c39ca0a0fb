package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// NewStateBatch returns a batch for applying commands (Apply).
func (s *Store) NewStateBatch() *Batch {
	return &Batch{s: s, pb: s.db.NewBatch(), state: &stateWrites{}}
}

// stateWrites is what a state batch keeps beside its Pebble batch.
//
// Its writes are held and added to the Pebble batch in key order when it
// is committed: Pebble's memtable, a skiplist, then finds the place of a
// key that follows the previous one (a task's record and index entries
// in a shard, by id or due time) next to it instead of from the top
// (BenchmarkApplyRegistrations compares). The Pebble batch is not
// indexed, so reads through the batch (the old records that commands
// replace or delete) come from tasks and dead, which hold what the batch
// wrote, and otherwise from the store.
type stateWrites struct {
	arena  []byte      // the held keys and values, back to back
	writes []heldWrite // in the order they were made
	tasks  map[uint64]knownTask
	dead   map[uint64]*storepb.DeadLetter // written by the batch; nil: deleted

	// sort's scratch
	spread             []heldWrite
	tagEnds, shardEnds []int
}

// sortHeldWrites is false only in a benchmark's baseline.
var sortHeldWrites = true

// heldWrite is a write held in arena: key arena[start:mid], value
// arena[mid:end].
type heldWrite struct {
	kind            writeKind
	start, mid, end int
	// shadows: a write that replaced a deletion of its key before it in
	// the batch (simplify), which a single deletion cancelling the write
	// must put back.
	shadows bool
}

type writeKind uint8

const (
	writeSet writeKind = iota
	writeDelete
	writeSingleDelete
)

// knownTask is a task as stored before the batch (read ahead by
// Prefetch) or as the batch wrote it: decoded (t), or as a log entry
// encodes it (enc), until it is read; neither: no such task. once is the
// stored record's written_once.
type knownTask struct {
	t    *storepb.Task
	enc  []byte
	once bool
}

// exists reports whether k is a task, not its absence.
func (k knownTask) exists() bool { return k.t != nil || k.enc != nil }

// decoded returns k with its task decoded.
func (k knownTask) decoded() (knownTask, error) {
	if k.t != nil || k.enc == nil {
		return k, nil
	}
	t := new(storepb.Task)
	if err := unmarshal("task record", k.enc, t); err != nil {
		return k, err
	}
	return knownTask{t: t, once: k.once}, nil
}

// hold keeps a write of key whose value is value's parts, back to back.
func (s *stateWrites) hold(kind writeKind, key []byte, value ...[]byte) {
	start := len(s.arena)
	s.arena = append(s.arena, key...)
	mid := len(s.arena)
	for _, v := range value {
		s.arena = append(s.arena, v...)
	}
	s.writes = append(s.writes, heldWrite{kind: kind, start: start, mid: mid, end: len(s.arena)})
}

// release adds the held writes to pb in key order; writes of one key
// keep their order, so the last one wins as it would have.
func (s *stateWrites) release(pb *pebble.Batch) error {
	if s == nil || len(s.writes) == 0 {
		return nil
	}
	key := func(w heldWrite) []byte { return s.arena[w.start:w.mid] }
	if sortHeldWrites {
		s.sort(key)
	}
	for _, w := range simplify(s.writes, key) {
		var err error
		switch w.kind {
		case writeSet:
			err = pb.Set(key(w), s.arena[w.mid:w.end], nil)
		case writeDelete:
			err = pb.Delete(key(w), nil)
		case writeSingleDelete:
			err = pb.SingleDelete(key(w), nil)
		}
		if err != nil {
			return err
		}
	}
	s.arena, s.writes = s.arena[:0], s.writes[:0]
	return nil
}

// sort orders the held writes by key, writes of one key in the order
// they were made (start follows it). The writes are first spread, keeping
// their order, by key space (a key's first byte) and within a space by
// shard (the next two), then each run is sorted: a task's writes
// alternate between spaces (record, due, client) and shards, but within
// one space and shard they mostly come in key order already (ids and due
// times grow), which the sort finds in close to one pass.
func (s *stateWrites) sort(key func(heldWrite) []byte) {
	s.spread = slices.Grow(s.spread[:0], len(s.writes))[:len(s.writes)]
	tag := func(w heldWrite) int { // an empty key's is 0
		if w.mid == w.start {
			return 0
		}
		return int(s.arena[w.start])
	}
	tagEnds := spreadWrites(s.writes, s.spread, 256, tag, s.tagEnds[:0])
	s.writes, s.spread, s.tagEnds = s.spread, s.writes, tagEnds
	byKey := func(a, b heldWrite) int {
		return cmp.Or(bytes.Compare(key(a), key(b)), cmp.Compare(a.start, b.start))
	}
	start := 0
	for _, end := range tagEnds {
		run := s.writes[start:end]
		start = end
		if len(run) < 2 {
			continue
		}
		shard := func(w heldWrite) int { // bytes 1 and 2, a short key's padded
			var b [2]byte
			if w.mid-w.start > 1 {
				copy(b[:], s.arena[w.start+1:w.mid])
			}
			return int(binary.BigEndian.Uint16(b[:]))
		}
		lo, hi := shard(run[0]), shard(run[0])
		for _, w := range run[1:] {
			lo, hi = min(lo, shard(w)), max(hi, shard(w))
		}
		if lo == hi || hi-lo >= len(run) {
			slices.SortFunc(run, byKey)
			continue
		}
		ends := spreadWrites(run, s.spread[:len(run)], hi-lo+1, func(w heldWrite) int { return shard(w) - lo }, s.shardEnds[:0])
		copy(run, s.spread[:len(run)])
		s.shardEnds = ends
		from := 0
		for _, to := range ends {
			if to-from > 1 {
				slices.SortFunc(run[from:to], byKey)
			}
			from = to
		}
	}
}

// spreadWrites places ws into dst, keeping their order, by bucket (from 0
// to buckets-1), and returns where each bucket ends in dst, in ends.
func spreadWrites(ws, dst []heldWrite, buckets int, bucket func(heldWrite) int, ends []int) []int {
	ends = slices.Grow(ends[:0], buckets)[:buckets]
	clear(ends)
	for _, w := range ws {
		ends[bucket(w)]++
	}
	at := 0
	for i, n := range ends {
		ends[i] = at
		at += n
	}
	for _, w := range ws {
		b := bucket(w)
		dst[ends[b]] = w
		ends[b]++
	}
	return ends
}

// simplify drops, in place, the writes that need not reach Pebble: of two
// writes of a key one after the other,
//   - a write and the single deletion after it both go: a single deletion
//     removes exactly the one write of its key since the last deletion, so
//     the pair leaves the key as it was before (a task put and deleted
//     within one batch costs Pebble nothing). If the write had replaced a
//     deletion, that deletion is what is left;
//   - otherwise, unless either is a single deletion, the first goes: the
//     second replaces whatever it left, for readers and for every older
//     version below. A single deletion is otherwise kept, with the write
//     before it: it must meet exactly the one write it removes.
func simplify(ws []heldWrite, key func(heldWrite) []byte) []heldWrite {
	kept := ws[:0]
	for _, w := range ws {
		if n := len(kept); n > 0 && bytes.Equal(key(kept[n-1]), key(w)) {
			switch last := kept[n-1]; {
			case last.kind == writeSet && w.kind == writeSingleDelete:
				if last.shadows {
					kept[n-1].kind, kept[n-1].shadows = writeDelete, false
				} else {
					kept = kept[:n-1]
				}
				continue
			case last.kind != writeSingleDelete && w.kind != writeSingleDelete:
				w.shadows = last.kind == writeDelete || last.shadows
				kept[n-1] = w
				continue
			}
		}
		kept = append(kept, w)
	}
	return kept
}

// reset empties s, keeping its memory for the next batch.
func (s *stateWrites) reset() {
	if s != nil {
		s.arena, s.writes = s.arena[:0], s.writes[:0]
		clear(s.tasks)
		clear(s.dead)
	}
}

// wroteTask notes that the batch wrote task id as k, or deleted it when
// k is no task.
func (s *stateWrites) wroteTask(id uint64, k knownTask) {
	if s == nil {
		return
	}
	if s.tasks == nil {
		s.tasks = make(map[uint64]knownTask)
	}
	s.tasks[id] = k
}

// task reads a task through the batch, with its stored record's
// written_once (once), which its WrittenOnce need not hold.
func (b *Batch) task(id uint64) (t *storepb.Task, once bool, err error) {
	if k, ok := b.state.tasks[id]; ok {
		if !k.exists() {
			return nil, false, fmt.Errorf("%w: task %#x", errMissing, id)
		}
		if k, err = k.decoded(); err != nil {
			return nil, false, err
		}
		b.state.tasks[id] = k
		return k.t, k.once, nil
	}
	t = new(storepb.Task)
	err = b.getStored(taskKey(id), t)
	return t, t.WrittenOnce, err
}

// deadLetter reads a dead letter through the batch.
func (b *Batch) deadLetter(id uint64) (*storepb.DeadLetter, error) {
	if d, ok := b.state.dead[id]; ok {
		if d == nil {
			return nil, fmt.Errorf("%w: dead letter %#x", errMissing, id)
		}
		return d, nil
	}
	d := new(storepb.DeadLetter)
	return d, b.getStored(deadLetterKey(id), d)
}

func (s *stateWrites) wroteDeadLetter(id uint64, d *storepb.DeadLetter) {
	if s == nil {
		return
	}
	if s.dead == nil {
		s.dead = make(map[uint64]*storepb.DeadLetter)
	}
	s.dead[id] = d
}

// Prefetch reads ahead, with one iterator, the stored tasks that the
// entries about to be applied replace or delete: for many of them that
// is several times cheaper than reading each when its mutation applies.
//
// Tasks known to c, if not nil, are taken from it instead.
func (b *Batch) Prefetch(entries []*Entry, c *TaskCache) error {
	if b.state == nil {
		return nil
	}
	var ids []uint64
	for _, e := range entries {
		for _, cmd := range e.Commands {
			for _, m := range cmd.muts {
				switch c := m.m.GetChange().(type) {
				case *storepb.Mutation_ReplaceTask:
					ids = append(ids, c.ReplaceTask.Id)
				case *storepb.Mutation_DeleteTask:
					ids = append(ids, c.DeleteTask)
				}
			}
		}
	}
	if b.state.tasks == nil {
		b.state.tasks = make(map[uint64]knownTask, len(ids))
	}
	ids = c.fill(ids, b.state.tasks)
	if len(ids) < 2 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return b.s.tasks(ids, func(id uint64, t *storepb.Task) {
		if _, wrote := b.state.tasks[id]; !wrote {
			b.state.tasks[id] = knownTask{t: t, once: t.GetWrittenOnce()}
		}
	})
}

// getStored reads a record from the store, as committed.
func (b *Batch) getStored(key []byte, m proto.Message) error {
	v, closer, err := b.s.db.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return fmt.Errorf("%w: key %x", errMissing, key)
		}
		return readError("read a record to change", err)
	}
	defer closer.Close()
	return unmarshalStored(fmt.Sprintf("record at key %x", key), v, m)
}

package store

import (
	"bytes"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TaskCache holds task records, decoded, as the state batches of one
// owner left them: the tasks a batch wrote or read ahead, and those the
// owner read through Tasks. A task is read
// several times in a short life (started, its outcome applied, the next
// head of its group found); each read from Pebble is a search of the
// memtables and the levels and a decode, where the cache answers from a
// map.
//
// The cache is right only while every write to its tasks goes through
// the owner's state batches, each given to Absorb once committed: the
// owner clears it when anything else writes them (a shard's state
// restored from a snapshot, or dropped). Its records are shared, never
// to be changed by anyone. It is not safe for concurrent use.
type TaskCache struct {
	m   map[uint64]knownTask
	max int
}

// NewTaskCache returns a cache of at most max tasks.
func NewTaskCache(max int) *TaskCache {
	return &TaskCache{m: make(map[uint64]knownTask), max: max}
}

// Task returns the cached record of task id, if known. It must not be
// changed.
func (c *TaskCache) Task(id uint64) (*storepb.Task, bool) {
	t, ok, err := c.task(id)
	if err != nil { // not a record: read it from the store, which says so
		delete(c.m, id)
		return nil, false
	}
	return t, ok
}

// task returns the cached record of task id, decoding it first if it is
// held as a log entry encodes it.
func (c *TaskCache) task(id uint64) (*storepb.Task, bool, error) {
	k, ok := c.m[id]
	if !ok || k.t != nil {
		return k.t, ok, nil
	}
	k, err := k.decoded()
	if err != nil {
		return nil, false, err
	}
	c.m[id] = k
	return k.t, true, nil
}

// Clear forgets every task.
func (c *TaskCache) Clear() { clear(c.m) }

// Len returns the number of tasks cached.
func (c *TaskCache) Len() int { return len(c.m) }

// Absorb takes what b, a state batch just committed, knows of tasks: the
// records it wrote, and those it read ahead and left as they were; a task
// it deleted is forgotten. Past max tasks, a quarter are forgotten.
func (c *TaskCache) Absorb(b *Batch) {
	if b.state == nil || !b.committed {
		return
	}
	for id, k := range b.state.tasks {
		switch {
		case !k.exists():
			delete(c.m, id)
			continue
		case k.t == nil:
			// A view of a log entry: copied, so that the cache does not
			// keep the entry.
			k.enc = bytes.Clone(k.enc)
		case k.t.WrittenOnce:
			// Readers never see written_once (once keeps it), and the
			// batch, committed, no longer reads it. Only a record read
			// from Pebble by this batch has it set, and no one else holds
			// that record yet.
			k.t.WrittenOnce = false
		}
		c.m[id] = k
	}
	c.trim()
}

// trim forgets a quarter of the tasks, whichever the map gives first,
// once there are more than max.
func (c *TaskCache) trim() {
	if len(c.m) <= c.max {
		return
	}
	drop := len(c.m) - c.max*3/4
	for id := range c.m {
		if drop == 0 {
			break
		}
		delete(c.m, id)
		drop--
	}
}

// Tasks is s.Tasks through c: the tasks c knows are taken from it, the
// others read from s with one iterator and kept in c, so that the next
// batch to change them (a started task's outcome, say) need not read
// them again. ids must be ascending; fn gets them in that order. Only
// the cache's owner, which commits every change to these tasks, may call
// it, and never while one of its batches is being filled.
func (c *TaskCache) Tasks(s *Store, ids []uint64, fn func(id uint64, t *storepb.Task)) error {
	var missing []uint64
	for _, id := range ids {
		if _, ok := c.m[id]; !ok {
			missing = append(missing, id)
		}
	}
	err := s.tasks(missing, func(id uint64, t *storepb.Task) {
		if t != nil {
			c.m[id] = knownTask{t: t, once: t.WrittenOnce}
			t.WrittenOnce = false
		}
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		t, _, err := c.task(id)
		if err != nil {
			return err
		}
		fn(id, t) // nil: no such task
	}
	c.trim()
	return nil
}

// fill puts the tasks of ids that c knows, and that the batch has not
// written, into known, and returns the other ids. c may be nil.
func (c *TaskCache) fill(ids []uint64, known map[uint64]knownTask) []uint64 {
	if c == nil {
		return ids
	}
	rest := ids[:0]
	for _, id := range ids {
		if _, wrote := known[id]; wrote {
			continue
		}
		if k, ok := c.m[id]; ok {
			known[id] = k
			continue
		}
		rest = append(rest, id)
	}
	return rest
}

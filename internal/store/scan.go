package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Page sizes for ListTasks and ListDeadLetters.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// DueEntry is one due index entry.
type DueEntry struct {
	Due int64 // Unix ms
	ID  uint64
	// Group is GroupRef(client, group) of an ordered task (see Ordered),
	// empty for any other. It is valid only during the callback.
	Group []byte
}

// ScanDue calls fn for each due index entry of shard with fromMs <= due <
// toMs, in (wake, id) order (see WakeMs). fn returning an error stops the scan and
// ScanDue returns that error. The scan reads one consistent snapshot.
func (s *Store) ScanDue(shard uint16, fromMs, toMs int64, fn func(DueEntry) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	return scanDue(s.db, shard, fromMs, toMs, fn)
}

func scanDue(r pebble.Reader, shard uint16, fromMs, toMs int64, fn func(DueEntry) error) error {
	if fromMs >= toMs {
		return nil
	}
	prefix := shardPrefix(tagDue, shard)
	lower := appendDue(slices.Clip(prefix), fromMs)
	upper := appendDue(slices.Clip(prefix), toMs) // every key with due toMs is longer, so above it
	return scan(r, lower, upper, func(k, v []byte) error {
		due, id, err := decodeDueKey(k)
		if err != nil {
			return corruptf("due index key %x: %v", k, err)
		}
		return fn(DueEntry{Due: due, ID: id, Group: v})
	})
}

// indexedTask loads the record an index entry points to. Index and record
// are written in one batch, so within a snapshot a missing record is
// corruption.
func indexedTask(r pebble.Reader, id uint64) (*storepb.Task, error) {
	t := new(storepb.Task)
	if err := getRecord(r, "task", taskKey(id), t); err != nil {
		if isNotFound(err) {
			return nil, corruptf("index entry for task %#x without a record", id)
		}
		return nil, fmt.Errorf("task %#x: %w", id, err)
	}
	return t, nil
}

// TaskQuery selects tasks for ListTasks.
type TaskQuery struct {
	// Client restricts the list to one client's tasks; "" lists every
	// client's (admin).
	Client string
	// Group restricts the list to one group; "" means any. With Client
	// set, only the group's shard is read.
	Group string
	// After is the cursor: only ids greater than After are returned.
	After uint64
	// Limit is the page size. Default DefaultLimit; at most MaxLimit.
	Limit int
	// Match, if set, further filters tasks (due range, recurring, status).
	// It runs in id order and may stop being called once the page is full.
	Match func(*storepb.Task) bool
}

// ListTasks returns one page of matching tasks in id order and the cursor
// for the next page, 0 when there are no more. The page reads one
// consistent snapshot.
func (s *Store) ListTasks(q TaskQuery) ([]*storepb.Task, uint64, error) {
	if err := s.enter(); err != nil {
		return nil, 0, err
	}
	defer s.gate.Exit()
	snap := s.db.NewSnapshot()
	defer snap.Close()

	p := newPage[*storepb.Task](q.Limit, (*storepb.Task).GetId)
	keep := func(t *storepb.Task) error {
		if (q.Group == "" || t.Group == q.Group) && (q.Match == nil || q.Match(t)) {
			return p.add(t)
		}
		return nil
	}
	var err error
	switch {
	case q.Client == "":
		err = scanRecords(snap, tagTask, q.After, func() *storepb.Task { return new(storepb.Task) }, keep)
	case q.Group != "":
		shard := s.GroupShard(q.Client, q.Group)
		err = scanClientIndex(snap, tagClientIndex, shard, shard, q.Client, q.After, func(id uint64) error {
			return withTask(snap, id, keep)
		})
	default:
		err = scanClientIndex(snap, tagClientIndex, 0, uint16(s.shards-1), q.Client, q.After, func(id uint64) error {
			return withTask(snap, id, keep)
		})
	}
	return p.result(err)
}

func withTask(r pebble.Reader, id uint64, fn func(*storepb.Task) error) error {
	t, err := indexedTask(r, id)
	if err != nil {
		return err
	}
	return fn(t)
}

// ListDeadLetters returns one page of dead letters in DeadLetterID order,
// of one client or, with client "", of all; after and the returned cursor
// work as in ListTasks.
func (s *Store) ListDeadLetters(client string, after uint64, limit int) ([]*storepb.DeadLetter, uint64, error) {
	if err := s.enter(); err != nil {
		return nil, 0, err
	}
	defer s.gate.Exit()
	snap := s.db.NewSnapshot()
	defer snap.Close()

	p := newPage(limit, DeadLetterID)
	var err error
	if client == "" {
		err = scanRecords(snap, tagDeadLetter, after, func() *storepb.DeadLetter { return new(storepb.DeadLetter) }, p.add)
	} else {
		err = scanClientIndex(snap, tagDeadClient, 0, uint16(s.shards-1), client, after, func(id uint64) error {
			d := new(storepb.DeadLetter)
			if err := getRecord(snap, "dead letter", deadLetterKey(id), d); err != nil {
				if isNotFound(err) {
					return corruptf("index entry for dead letter %#x without a record", id)
				}
				return fmt.Errorf("dead letter %#x: %w", id, err)
			}
			return p.add(d)
		})
	}
	return p.result(err)
}

// ScanGroups calls fn with every group of shard, in key order (client,
// then group, each shorter names first).
func (s *Store) ScanGroups(shard uint16, fn func(*storepb.Group) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	prefix := shardPrefix(tagGroup, shard)
	return scan(s.db, prefix, prefixEnd(prefix), func(k, v []byte) error {
		g := new(storepb.Group)
		if err := unmarshal(fmt.Sprintf("group at key %x", k), v, g); err != nil {
			return err
		}
		return fn(g)
	})
}

// ScanBlockedGroups calls fn with every blocked group of shard, from one
// snapshot, reading only the blocked groups' records: recovery uses it, so
// restart time does not grow with the number of groups.
func (s *Store) ScanBlockedGroups(shard uint16, fn func(*storepb.Group) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	prefix := shardPrefix(tagBlocked, shard)
	return scan(snap, prefix, prefixEnd(prefix), func(k, _ []byte) error {
		p, err := decodeKey(k)
		if err != nil {
			return corruptf("blocked group key %x: %v", k, err)
		}
		g := new(storepb.Group)
		what := fmt.Sprintf("blocked group %q/%q", p.a, p.b)
		if err := getRecord(snap, what, groupKey(shard, p.a, p.b), g); err != nil {
			return err
		}
		return fn(g)
	})
}

// ListClients returns every registered client, ordered by id.
func (s *Store) ListClients() ([]*storepb.Client, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.gate.Exit()
	var clients []*storepb.Client
	prefix := []byte{tagClient}
	err := scan(s.db, prefix, prefixEnd(prefix), func(k, v []byte) error {
		c := new(storepb.Client)
		if err := unmarshal(fmt.Sprintf("client at key %x", k), v, c); err != nil {
			return err
		}
		clients = append(clients, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(clients, func(a, b *storepb.Client) int { return strings.Compare(a.Id, b.Id) })
	return clients, nil
}

// scanRecords passes each record of an id-keyed space (tasks, dead
// letters) with id > after, in id order. Ids carry their shard in the top
// bits, so key order across shards is id order.
func scanRecords[M proto.Message](r pebble.Reader, tag byte, after uint64, alloc func() M, fn func(M) error) error {
	if after == math.MaxUint64 {
		return nil
	}
	first := after + 1
	lower := binary.BigEndian.AppendUint64(shardPrefix(tag, ShardOf(first)), first)
	return scan(r, lower, []byte{tag + 1}, func(k, v []byte) error {
		if _, err := decodeKey(k); err != nil {
			return corruptf("key %x: %v", k, err)
		}
		m := alloc()
		if err := unmarshal(fmt.Sprintf("record at key %x", k), v, m); err != nil {
			return err
		}
		return fn(m)
	})
}

// scanClientIndex passes the ids in a client index (tasks or dead
// letters) of shards first..last with id > after, in id order. One
// iterator seeks to the client's entries in each shard in turn: a seek is
// much cheaper than a new iterator.
func scanClientIndex(r pebble.Reader, tag byte, first, last uint16, client string, after uint64, fn func(uint64) error) (err error) {
	if after == math.MaxUint64 {
		return nil
	}
	from := after + 1
	first = max(first, ShardOf(from))
	if first > last {
		return nil
	}
	it, err := r.NewIter(&pebble.IterOptions{
		LowerBound: shardPrefix(tag, first),
		UpperBound: prefixEnd(shardPrefix(tag, last)),
	})
	if err != nil {
		return readError("scan", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && (err == nil || err == errStop) {
			err = readError("scan", cerr)
		}
	}()
	for shard := first; shard <= last; shard++ {
		prefix := clientPrefix(tag, shard, client)
		start := max(from, uint64(shard)<<idCounterBits)
		for valid := it.SeekGE(binary.BigEndian.AppendUint64(slices.Clip(prefix), start)); valid; valid = it.Next() {
			k := it.Key()
			if !bytes.HasPrefix(k, prefix) {
				break
			}
			if len(k) != len(prefix)+8 {
				return corruptf("client index key %x", k)
			}
			id := binary.BigEndian.Uint64(k[len(prefix):])
			if ShardOf(id) != shard {
				return corruptf("client index key %x: id %#x is not in shard %d", k, id, shard)
			}
			if err := fn(id); err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return readError("scan", err)
		}
	}
	return nil
}

// errStop is returned by page.add to end a scan that has filled its page;
// page.result turns it back into success.
var errStop = errors.New("store: page full")

// scan calls fn for each key in [lower, upper) in order and returns fn's
// first error, or else the iterator's.
func scan(r pebble.Reader, lower, upper []byte, fn func(k, v []byte) error) (err error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return readError("scan", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && (err == nil || err == errStop) {
			err = readError("scan", cerr)
		}
	}()
	for valid := it.First(); valid; valid = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			return readError("scan", verr)
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return readError("scan", err)
	}
	return nil
}

// page collects up to limit items and notices whether there is one more.
type page[T any] struct {
	limit int
	items []T
	more  bool
	id    func(T) uint64
}

func newPage[T any](limit int, id func(T) uint64) *page[T] {
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	return &page[T]{limit: limit, id: id}
}

// add appends t, or, on a full page, records that there is more and stops
// the scan.
func (p *page[T]) add(t T) error {
	if len(p.items) == p.limit {
		p.more = true
		return errStop
	}
	p.items = append(p.items, t)
	return nil
}

func (p *page[T]) result(err error) ([]T, uint64, error) {
	if err != nil && err != errStop {
		return nil, 0, err
	}
	var cursor uint64
	if p.more {
		cursor = p.id(p.items[len(p.items)-1])
	}
	return p.items, cursor, nil
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

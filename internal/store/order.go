package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// OrderEntry is a task's place in its group's order.
type OrderEntry struct {
	Due int64 // Unix ms
	Seq uint64
	ID  uint64
}

// Less orders entries as a group runs them: by due time, then sequence.
func (e OrderEntry) Less(o OrderEntry) bool {
	if e.Due != o.Due {
		return e.Due < o.Due
	}
	return e.Seq < o.Seq
}

// GroupOrder calls fn with the entries of a client's group in the order
// the group runs them, (due, seq), until fn returns false. The scan reads
// one consistent snapshot.
func (s *Store) GroupOrder(client, group string, fn func(OrderEntry) bool) (err error) {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	prefix := namedKey(tagOrder, s.GroupShard(client, group), client, group)
	err = scan(s.db, prefix, prefixEnd(prefix), func(k, _ []byte) error {
		e, err := decodeOrderEntry(k[len(prefix):])
		if err != nil {
			return corruptf("group order key %x: %v", k, err)
		}
		if !fn(e) {
			return errStop
		}
		return nil
	})
	if err == errStop {
		return nil
	}
	return err
}

// GroupHead returns the first entry of a client's group order; ok is
// false when the group has no ordered task.
//
// It answers from the group's front in memory (floor.go) when that is
// known, and otherwise scans from the group's floor, so the cost does not
// grow with the tasks the group ran since the last compaction.
func (s *Store) GroupHead(client, group string) (head OrderEntry, ok bool, err error) {
	if err := s.enter(); err != nil {
		return OrderEntry{}, false, err
	}
	defer s.gate.Exit()
	prefix := namedKey(tagOrder, s.GroupShard(client, group), client, group)
	first, known, from, gen := s.floors.get(prefix)
	if !known {
		first, err = s.scanFront(prefix, from, gen)
		if err != nil {
			return OrderEntry{}, false, err
		}
	}
	if first == nil {
		return OrderEntry{}, false, nil
	}
	head, err = decodeOrderEntry(first[len(prefix):])
	if err != nil {
		return OrderEntry{}, false, corruptf("group order key %x: %v", first, err)
	}
	return head, true, nil
}

// scanFront reads the first entries of the group order under prefix from
// from (nil: its start) into the group's floor, and returns the first.
func (s *Store) scanFront(prefix, from []byte, gen uint64) ([]byte, error) {
	if from == nil {
		from = prefix
	}
	var front [][]byte
	err := scan(s.db, from, prefixEnd(prefix), func(k, _ []byte) error {
		if len(front) == frontLen {
			return errStop // and there is more
		}
		front = append(front, bytes.Clone(k))
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	s.floors.scanned(prefix, front, err == nil, gen)
	if len(front) == 0 {
		return nil, nil
	}
	return front[0], nil
}

func decodeOrderEntry(rest []byte) (OrderEntry, error) {
	if len(rest) != 24 {
		return OrderEntry{}, errBadKey
	}
	return OrderEntry{
		Due: int64(binary.BigEndian.Uint64(rest) ^ 1<<63),
		Seq: binary.BigEndian.Uint64(rest[8:]),
		ID:  binary.BigEndian.Uint64(rest[16:]),
	}, nil
}

// errNoIdempotencyKey answers for a key the store's set says it does
// not hold: the usual answer, so it is made once.
var errNoIdempotencyKey = fmt.Errorf("%w: idempotency key", ErrNotFound)

// Idempotency returns the task id a client's idempotency key created and
// when (Unix ms).
func (s *Store) Idempotency(shard uint16, client, key string) (id uint64, createdMs int64, err error) {
	if err := s.enter(); err != nil {
		return 0, 0, err
	}
	defer s.gate.Exit()
	k := idempotencyKey(shard, client, key)
	if !s.idem.mayHold(shard, k) {
		return 0, 0, errNoIdempotencyKey
	}
	what := fmt.Sprintf("idempotency key %q of client %q", key, client)
	err = get(s.db, what, k, func(v []byte) error {
		if len(v) != 16 {
			return corruptf("%s holds %d bytes, want 16", what, len(v))
		}
		id, createdMs = binary.BigEndian.Uint64(v), int64(binary.BigEndian.Uint64(v[8:]))
		return nil
	})
	return id, createdMs, err
}

// IdempotencyKey is one remembered idempotency key.
type IdempotencyKey struct {
	Client, Key string
	CreatedMs   int64
}

// ScanIdempotency calls fn with a shard's idempotency keys, oldest first,
// until fn returns false.
func (s *Store) ScanIdempotency(shard uint16, fn func(IdempotencyKey) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	prefix := shardPrefix(tagIdemExpiry, shard)
	err := scan(s.db, prefix, prefixEnd(prefix), func(k, _ []byte) error {
		p, err := decodeKey(k)
		if err != nil {
			return corruptf("idempotency expiry key %x: %v", k, err)
		}
		if !fn(IdempotencyKey{Client: p.a, Key: p.b, CreatedMs: p.due}) {
			return errStop
		}
		return nil
	})
	if err == errStop {
		return nil
	}
	return err
}

// DeadLetterRef is what the dead letter index says of one dead letter,
// without reading it.
type DeadLetterRef struct {
	ID          uint64
	Client      string
	FailedMs    int64
	BlocksGroup bool
}

// DeadLetterRefs calls fn with a shard's dead letters of one client (of
// every client with client ""), in id order, which is the order they
// failed in, until fn returns false. Only the index is read.
func (s *Store) DeadLetterRefs(shard uint16, client string, fn func(DeadLetterRef) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	prefix := shardPrefix(tagDeadClient, shard)
	if client != "" {
		prefix = clientPrefix(tagDeadClient, shard, client)
	}
	err := scan(s.db, prefix, prefixEnd(prefix), func(k, v []byte) error {
		ref, err := decodeDeadRef(k, v)
		if err != nil {
			return corruptf("dead letter index key %x: %v", k, err)
		}
		if !fn(ref) {
			return errStop
		}
		return nil
	})
	if err == errStop {
		return nil
	}
	return err
}

func decodeDeadRef(k, v []byte) (DeadLetterRef, error) {
	p, err := decodeKey(k)
	if err != nil {
		return DeadLetterRef{}, err
	}
	if len(v) != 9 {
		return DeadLetterRef{}, fmt.Errorf("value of %d bytes, want 9", len(v))
	}
	return DeadLetterRef{ID: p.id, Client: p.a, FailedMs: int64(binary.BigEndian.Uint64(v)), BlocksGroup: v[8] == 1}, nil
}

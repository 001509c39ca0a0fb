package store

// The system group. Registered clients and their sessions are valid on
// every node, so they are replicated like a shard: by a Raft group of
// their own, SystemShard, whose state is every client record, every
// session record and the group's meta (its applied index), and whose
// state machine is internal/auth. Its log, hard state and meta are kept
// under SystemShard like any shard's; snapshots (SnapshotShard,
// RestoreShard) carry its state like a shard's.

// SystemShard is the shard number of the system group, above every
// task shard (MaxShards).
const SystemShard uint16 = 0xFFFF

// PutSession writes a session record under key (a hash of the session's
// id: the id itself is never stored). value is the session as internal/auth
// encodes it.
func (b *Batch) PutSession(key, value []byte) error {
	if len(key) == 0 {
		return invalidf("PutSession without a key")
	}
	b.set(sessionKey(key), value)
	return b.done()
}

// DeleteSession deletes the session record under key.
func (b *Batch) DeleteSession(key []byte) error {
	b.delete(sessionKey(key))
	return b.done()
}

// ScanSessions calls fn with every session record's key and value, in key
// order. fn must not keep them.
func (s *Store) ScanSessions(fn func(key, value []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	prefix := []byte{tagSession}
	return scan(s.db, prefix, prefixEnd(prefix), func(k, v []byte) error {
		p, err := decodeKey(k)
		if err != nil {
			return corruptf("session key %x: %v", k, err)
		}
		return fn([]byte(p.a), v)
	})
}

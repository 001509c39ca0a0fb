package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A shard's replicated state is every key of these tags in the shard:
// what its log's commands wrote. The logs themselves are not part of it,
// nor are registered clients and sessions, which are the system group's
// (see statePrefixes).
var stateTags = []byte{
	tagTask, tagDue, tagOrder, tagClientIndex, tagGroup, tagBlocked,
	tagIdempotency, tagIdemExpiry, tagDeadLetter, tagDeadClient, tagShardMeta, tagReplace,
}

// statePrefixes returns the key prefixes that hold a shard's replicated
// state.
func statePrefixes(shard uint16) [][]byte {
	if shard == SystemShard {
		return [][]byte{{tagClient}, shardMetaKey(SystemShard), {tagSession}}
	}
	ps := make([][]byte, len(stateTags))
	for i, tag := range stateTags {
		ps[i] = shardPrefix(tag, shard)
	}
	return ps
}

// snapshotMagic starts an encoded shard snapshot; its last byte is the
// format's version.
var snapshotMagic = []byte("BSS\x01")

// ShardSnapshot is a consistent, read-only view of one shard's replicated
// state, for sending to a replica that fell behind its log. Close it when
// done.
type ShardSnapshot struct {
	s     *Store
	snap  *pebble.Snapshot
	shard uint16
	// Meta is the shard's high-water marks in the view: Applied is the
	// log index the state includes.
	Meta *storepb.ShardMeta
}

// SnapshotShard takes a view of a shard's replicated state as it is now.
func (s *Store) SnapshotShard(shard uint16) (*ShardSnapshot, error) {
	if int(shard) >= s.shards && shard != SystemShard {
		return nil, invalidf("shard %d >= %d", shard, s.shards)
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.gate.Exit()
	snap := s.db.NewSnapshot()
	meta := new(storepb.ShardMeta)
	if err := getRecord(snap, fmt.Sprintf("shard %d meta", shard), shardMetaKey(shard), meta); err != nil && !isNotFound(err) {
		snap.Close()
		return nil, err
	}
	return &ShardSnapshot{s: s, snap: snap, shard: shard, Meta: meta}, nil
}

// Close releases the view.
func (ss *ShardSnapshot) Close() error { return ss.snap.Close() }

// Each calls fn with every key and value of the state, in key order. fn
// must not keep them.
func (ss *ShardSnapshot) Each(fn func(key, value []byte) error) error {
	if err := ss.s.enter(); err != nil {
		return err
	}
	defer ss.s.gate.Exit()
	for _, p := range statePrefixes(ss.shard) {
		if err := scan(ss.snap, p, prefixEnd(p), fn); err != nil {
			return err
		}
	}
	return nil
}

// Encode returns the state as one byte string for RestoreShard: a header,
// then each key and value, each preceded by its length.
func (ss *ShardSnapshot) Encode() ([]byte, error) {
	out := append(bytes.Clone(snapshotMagic), 0, 0)
	binary.BigEndian.PutUint16(out[len(snapshotMagic):], ss.shard)
	err := ss.Each(func(k, v []byte) error {
		out = append(binary.AppendUvarint(out, uint64(len(k))), k...)
		out = append(binary.AppendUvarint(out, uint64(len(v))), v...)
		return nil
	})
	return out, err
}

// RestoreShard replaces a shard's replicated state with an encoded
// snapshot of it (ShardSnapshot.Encode) and returns the snapshot's
// high-water marks. Nothing is written if it returns an error.
func (b *Batch) RestoreShard(shard uint16, data []byte) (*storepb.ShardMeta, error) {
	kvs, err := decodeShardSnapshot(shard, data)
	if err != nil {
		return nil, err
	}
	meta := new(storepb.ShardMeta)
	for _, kv := range kvs {
		if bytes.Equal(kv[0], shardMetaKey(shard)) {
			if err := unmarshal("snapshot shard meta", kv[1], meta); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range statePrefixes(shard) {
		b.deleteRange(p, prefixEnd(p))
	}
	for _, kv := range kvs {
		b.set(kv[0], kv[1])
	}
	b.rewrites = true
	b.rewritten = append(b.rewritten, shard)
	return meta, b.done()
}

// decodeShardSnapshot checks and splits an encoded snapshot of shard.
func decodeShardSnapshot(shard uint16, data []byte) ([][2][]byte, error) {
	head := len(snapshotMagic) + 2
	if len(data) < head || !bytes.Equal(data[:len(snapshotMagic)], snapshotMagic) {
		return nil, corruptf("shard snapshot: bad header")
	}
	if got := binary.BigEndian.Uint16(data[len(snapshotMagic):]); got != shard {
		return nil, corruptf("snapshot of shard %d given for shard %d", got, shard)
	}
	var kvs [][2][]byte
	rest := data[head:]
	for len(rest) > 0 {
		var kv [2][]byte
		for i := range kv {
			n, w := binary.Uvarint(rest)
			if w <= 0 || uint64(len(rest)-w) < n {
				return nil, corruptf("shard snapshot: truncated")
			}
			kv[i], rest = rest[w:w+int(n)], rest[w+int(n):]
		}
		if !inShardState(kv[0], shard) {
			return nil, corruptf("shard snapshot: key %x is not shard %d's state", kv[0], shard)
		}
		kvs = append(kvs, kv)
	}
	return kvs, nil
}

// inShardState reports whether key belongs to shard's replicated state.
func inShardState(key []byte, shard uint16) bool {
	for _, p := range statePrefixes(shard) {
		if bytes.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

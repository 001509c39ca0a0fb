package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Key-space tags of the shards' replication logs.
const (
	tagRaftEntry     byte = 'l' // l|shard|index → raftpb.Entry
	tagRaftHardState byte = 'h' // h|shard       → raftpb.HardState
	tagRaftTruncated byte = 'n' // n|shard       → raftpb.SnapshotMetadata: where the log starts
)

func raftEntryKey(shard uint16, index uint64) []byte {
	return binary.BigEndian.AppendUint64(appendShard(make([]byte, 0, 11), tagRaftEntry, shard), index)
}

// RaftLog is what a shard's replica persisted: its hard state, the point
// its log starts after (the last truncation or snapshot, with the group's
// configuration then), and the entries since.
type RaftLog struct {
	HardState *raftpb.HardState
	Truncated *raftpb.SnapshotMetadata
	Entries   []*raftpb.Entry
}

// RaftLog reads a shard's replication log. A shard that never had one has
// empty values.
func (s *Store) RaftLog(shard uint16) (RaftLog, error) {
	if err := s.enter(); err != nil {
		return RaftLog{}, err
	}
	defer s.gate.Exit()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	l := RaftLog{HardState: new(raftpb.HardState), Truncated: new(raftpb.SnapshotMetadata)}
	for _, r := range []struct {
		tag byte
		m   proto.Message
	}{{tagRaftHardState, l.HardState}, {tagRaftTruncated, l.Truncated}} {
		err := getRecord(snap, fmt.Sprintf("shard %d replication state", shard), appendShard(nil, r.tag, shard), r.m)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return RaftLog{}, err
		}
	}
	prefix := shardPrefix(tagRaftEntry, shard)
	err := scan(snap, prefix, prefixEnd(prefix), func(k, v []byte) error {
		e := new(raftpb.Entry)
		if err := unmarshal(fmt.Sprintf("log entry at key %x", k), v, e); err != nil {
			return err
		}
		if want := binary.BigEndian.Uint64(k[len(prefix):]); e.GetIndex() != want {
			return corruptf("log entry at key %x holds index %d", k, e.Index)
		}
		l.Entries = append(l.Entries, e)
		return nil
	})
	return l, err
}

// AppendRaftEntries persists entries of a shard's log. Entries at or after
// the first of them that are already persisted (up to lastPersisted) are
// deleted first, one by one, as a new leader's log overrides a
// follower's: so every entry is written once since its last deletion,
// which lets CompactRaftLog single-delete it.
func (b *Batch) AppendRaftEntries(shard uint16, entries []*raftpb.Entry, lastPersisted uint64) error {
	if len(entries) == 0 {
		return nil
	}
	for i := entries[0].GetIndex(); i <= lastPersisted; i++ {
		b.delete(raftEntryKey(shard, i))
	}
	for _, e := range entries {
		v, err := proto.MarshalOptions{}.MarshalAppend(b.rec[:0], e)
		if err != nil {
			return invalidf("encode log entry %d: %v", e.GetIndex(), err)
		}
		b.rec = v
		b.set(raftEntryKey(shard, e.GetIndex()), v)
	}
	return b.done()
}

// SetRaftHardState persists a shard's hard state.
func (b *Batch) SetRaftHardState(shard uint16, hs *raftpb.HardState) error {
	if err := b.encode(hs); err != nil {
		return err
	}
	b.set(appendShard(nil, tagRaftHardState, shard), b.rec)
	return b.done()
}

// TruncateRaftLog deletes every log entry of a shard and records that
// its log now starts after meta.Index, whose state the shard holds: for
// a new log, or one a snapshot replaces. Raft drops the whole log when it
// restores a snapshot, the entries beyond the snapshot's index too (they
// are of an older term, or the snapshot would not have been needed), so
// none may outlive it here: read back after a restart they would follow
// the snapshot in the log, and a later append, not knowing of them, would
// write their keys a second time, which CompactRaftLog's single deletions
// do not allow.
func (b *Batch) TruncateRaftLog(shard uint16, meta *raftpb.SnapshotMetadata) error {
	if err := b.encode(meta); err != nil {
		return err
	}
	b.set(appendShard(nil, tagRaftTruncated, shard), b.rec)
	p := shardPrefix(tagRaftEntry, shard)
	b.deleteRange(p, prefixEnd(p))
	return b.done()
}

// CompactRaftLog deletes a shard's log entries from first up to and
// including meta.Index, whose state the shard holds, and records where
// the log now starts. The log must start at first. It is the truncation
// of a log as it grows: each entry is written once since its last
// deletion (AppendRaftEntries), so it is single-deleted, and the pair
// vanishes when a flush or compaction meets it. A range deletion would
// do the same in one write, but every iterator made while range
// deletions sit in the memtable sorts them all again, and a shard's log
// is truncated often.
func (b *Batch) CompactRaftLog(shard uint16, first uint64, meta *raftpb.SnapshotMetadata) error {
	if err := b.encode(meta); err != nil {
		return err
	}
	b.set(appendShard(nil, tagRaftTruncated, shard), b.rec)
	for i := first; i <= meta.GetIndex(); i++ {
		b.singleDelete(raftEntryKey(shard, i))
	}
	return b.done()
}

func (b *Batch) deleteRange(start, end []byte) {
	if b.err == nil {
		b.err = b.pb.DeleteRange(start, end, nil)
	}
}

// RaftShards returns the shards that have a replication log in the store.
func (s *Store) RaftShards() ([]uint16, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.gate.Exit()
	var shards []uint16
	p := []byte{tagRaftHardState}
	err := scan(s.db, p, prefixEnd(p), func(k, _ []byte) error {
		if len(k) != 3 {
			return corruptf("hard state key %x", k)
		}
		shards = append(shards, binary.BigEndian.Uint16(k[1:]))
		return nil
	})
	return shards, err
}

// DropShard deletes a shard's replication log and replicated state: the
// node no longer hosts it.
func (b *Batch) DropShard(shard uint16) error {
	for _, tag := range []byte{tagRaftEntry, tagRaftHardState, tagRaftTruncated} {
		p := shardPrefix(tag, shard)
		b.deleteRange(p, prefixEnd(p))
	}
	for _, p := range statePrefixes(shard) {
		b.deleteRange(p, prefixEnd(p))
	}
	b.rewrites = true
	b.rewritten = append(b.rewritten, shard)
	return b.done()
}

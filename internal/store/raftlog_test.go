package store

import (
	"fmt"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// TestRaftLogMatchesModel drives a shard's log as a replica does (appends
// that may override an unsynced suffix, compactions of the applied
// prefix, a snapshot's truncation) with Pebble flushing and compacting in
// between, and checks after each step that RaftLog returns exactly the
// model's entries: a single deletion that met a second write of its key
// would bring an overridden entry back.
func TestRaftLogMatchesModel(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	const shard = 3
	rapid.Check(t, func(rt *rapid.T) {
		m := &raftLogModel{s: s, start: 0}
		commit(t, s, func(b *Batch) {
			if err := b.DropShard(shard); err != nil {
				rt.Fatal(err)
			}
		})
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			b := s.NewBatch()
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3, 4: // append, overriding from some index on
				first := rapid.Uint64Range(m.start+1, m.last()+1).Draw(rt, "first")
				n := rapid.IntRange(1, 5).Draw(rt, "n")
				var es []*raftpb.Entry
				for i := range uint64(n) {
					es = append(es, &raftpb.Entry{Index: proto.Uint64(first + i), Term: proto.Uint64(uint64(step)), Data: fmt.Appendf(nil, "step %d", step)})
				}
				must(rt, b.AppendRaftEntries(shard, es, m.last()))
				m.entries = append(m.entries[:first-m.start-1], es...)
			case 5, 6, 7: // compact the applied prefix
				if m.last() == m.start {
					continue
				}
				upTo := rapid.Uint64Range(m.start+1, m.last()).Draw(rt, "upTo")
				must(rt, b.CompactRaftLog(shard, m.start+1, &raftpb.SnapshotMetadata{Index: proto.Uint64(upTo), Term: proto.Uint64(1)}))
				m.entries = m.entries[upTo-m.start:]
				m.start = upTo
			case 8: // a snapshot at some later index replaces the whole log
				at := rapid.Uint64Range(m.start, m.last()+3).Draw(rt, "snapshot")
				must(rt, b.TruncateRaftLog(shard, &raftpb.SnapshotMetadata{Index: proto.Uint64(at), Term: proto.Uint64(1)}))
				m.entries = nil
				m.start = at
			case 9:
				must(rt, s.db.Flush())
				if rapid.Bool().Draw(rt, "compact") {
					must(rt, s.db.Compact(t.Context(), []byte{tagRaftEntry}, []byte{tagRaftEntry + 1}, true))
				}
				continue
			}
			must(rt, s.Commit(b))
			m.check(rt, shard)
		}
	})
}

type raftLogModel struct {
	s       *Store
	start   uint64 // the log starts after this index
	entries []*raftpb.Entry
}

func (m *raftLogModel) last() uint64 { return m.start + uint64(len(m.entries)) }

func (m *raftLogModel) check(rt *rapid.T, shard uint16) {
	l, err := m.s.RaftLog(shard)
	if err != nil {
		rt.Fatal(err)
	}
	if got := l.Truncated.GetIndex(); got != m.start {
		rt.Fatalf("log starts after %d, want %d", got, m.start)
	}
	if !slices.EqualFunc(l.Entries, m.entries, func(a, b *raftpb.Entry) bool { return proto.Equal(a, b) }) {
		rt.Fatalf("log holds %v\nwant %v", l.Entries, m.entries)
	}
}

// A snapshot replaces the whole log, entries beyond its index included,
// as Raft's own log does when it restores one: appended to again from
// the snapshot on and compacted, the log holds only the new entries.
func TestSnapshotReplacesTheWholeLog(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	const shard = 5
	entries := func(from, to, term uint64) []*raftpb.Entry {
		var es []*raftpb.Entry
		for i := from; i <= to; i++ {
			es = append(es, &raftpb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: fmt.Appendf(nil, "%d/%d", term, i)})
		}
		return es
	}
	// An old term's entries up to 10, never committed; a snapshot at 6.
	commit(t, s, func(b *Batch) { must(t, b.AppendRaftEntries(shard, entries(1, 10, 1), 0)) })
	commit(t, s, func(b *Batch) {
		must(t, b.TruncateRaftLog(shard, &raftpb.SnapshotMetadata{Index: proto.Uint64(6), Term: proto.Uint64(2)}))
	})
	l, err := s.RaftLog(shard)
	must(t, err)
	if len(l.Entries) != 0 || l.Truncated.GetIndex() != 6 {
		t.Fatalf("after the snapshot: log starts after %d and holds %v, want none after 6", l.Truncated.GetIndex(), l.Entries)
	}
	// The new leader's entries from the snapshot on, then a compaction of
	// some of them, flushed and compacted in Pebble.
	want := entries(7, 12, 2)
	commit(t, s, func(b *Batch) { must(t, b.AppendRaftEntries(shard, want, 6)) })
	commit(t, s, func(b *Batch) {
		must(t, b.CompactRaftLog(shard, 7, &raftpb.SnapshotMetadata{Index: proto.Uint64(9), Term: proto.Uint64(2)}))
	})
	must(t, s.db.Flush())
	must(t, s.db.Compact(t.Context(), []byte{tagRaftEntry}, []byte{tagRaftEntry + 1}, true))
	l, err = s.RaftLog(shard)
	must(t, err)
	if !slices.EqualFunc(l.Entries, want[3:], func(a, b *raftpb.Entry) bool { return proto.Equal(a, b) }) {
		t.Fatalf("log holds %v\nwant %v", l.Entries, want[3:])
	}
}

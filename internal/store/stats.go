package store

// Stats is a snapshot of the store's counters. Counters only grow from
// Open; DiskBytes is a current value, and it and the flushed and
// compacted bytes are left zero after Close.
type Stats struct {
	Commits       uint64 // successful non-empty commits, Commit and CommitNoSync
	SyncedCommits uint64 // those by Commit, which waits for an fsync
	CommitOps     uint64 // batch operations in all commits
	WALSyncs      uint64 // fsyncs of the write-ahead log
	WALBytes      uint64 // bytes written to the write-ahead log
	Syncs         uint64 // fsyncs of any file or directory, WAL included
	Corruptions   uint64 // corruption Pebble found in files while running
	DiskBytes     uint64 // bytes of every file Pebble holds: WAL, sstables, MANIFEST
	// FlushedBytes and CompactedBytes are the sstable bytes flushes and
	// compactions wrote since Open: with WALBytes, the write
	// amplification.
	FlushedBytes   uint64
	CompactedBytes uint64
}

// CommitsPerSync is the group commit factor: how many synced commits one
// WAL fsync covered on average.
func (st Stats) CommitsPerSync() float64 {
	if st.WALSyncs == 0 {
		return 0
	}
	return float64(st.SyncedCommits) / float64(st.WALSyncs)
}

// Stats returns the store's counters. It is cheap enough for every metrics
// scrape; after Close only the counters are filled in.
func (s *Store) Stats() Stats {
	st := Stats{
		Commits:       s.c.commits.Load(),
		SyncedCommits: s.c.syncedCommits.Load(),
		CommitOps:     s.c.commitOps.Load(),
		WALSyncs:      s.c.walSyncs.Load(),
		WALBytes:      s.c.walBytes.Load(),
		Syncs:         s.c.syncs.Load(),
		Corruptions:   s.c.corruptions.Load(),
	}
	if s.enter() == nil {
		defer s.gate.Exit()
		m := s.db.Metrics()
		st.DiskBytes = m.DiskSpaceUsage()
		for _, l := range m.Levels {
			st.FlushedBytes += l.TableBytesFlushed + l.BlobBytesFlushed
			st.CompactedBytes += l.TableBytesCompacted + l.BlobBytesCompacted
		}
	}
	return st
}

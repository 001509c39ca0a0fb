package store

import (
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// counters are the Store's cheap, always-on statistics.
type counters struct {
	commits       atomic.Uint64 // successful non-empty commits, synced or not
	syncedCommits atomic.Uint64 // those by Commit, which waits for an fsync
	commitOps     atomic.Uint64 // operations in all commits
	walSyncs      atomic.Uint64 // fsyncs of WAL files
	walBytes      atomic.Uint64 // bytes written to WAL files
	syncs         atomic.Uint64 // fsyncs of any file or directory
	corruptions   atomic.Uint64 // corruption events reported by Pebble
}

// countingFS wraps the filesystem Pebble uses to count fsyncs and WAL bytes
// where they happen, below Pebble: this is how Stats proves that concurrent
// commits share fsyncs.
type countingFS struct {
	vfs.FS
	c *counters
}

// isWAL reports whether name is a Pebble write-ahead log (NNNNNN.log).
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (fs countingFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return countingFile{File: f, c: fs.c, wal: isWAL(name)}, nil
}

func (fs countingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(f, name, err)
}

func (fs countingFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(f, name, err)
}

func (fs countingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(f, newname, err)
}

func (fs countingFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(f, name, err)
}

func (fs countingFS) Unwrap() vfs.FS { return fs.FS }

type countingFile struct {
	vfs.File
	c   *counters
	wal bool
}

func (f countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if f.wal {
		f.c.walBytes.Add(uint64(n))
	}
	return n, err
}

func (f countingFile) Sync() error {
	f.countSync()
	return f.File.Sync()
}

func (f countingFile) SyncData() error {
	f.countSync()
	return f.File.SyncData()
}

func (f countingFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		f.countSync()
	}
	return full, err
}

func (f countingFile) countSync() {
	f.c.syncs.Add(1)
	if f.wal {
		f.c.walSyncs.Add(1)
	}
}

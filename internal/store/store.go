package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/boomerangd/boomerang/internal/gate"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// SchemaVersion is the version of the key layout and records this build
// reads and writes. Open refuses a store with any other version.
const SchemaVersion = 3

// formatVersion pins Pebble's on-disk format, so that upgrading Pebble
// never silently ratchets the files to a format an older build cannot
// read. It includes WAL sync offsets, which let recovery tell a torn
// tail from corruption, and checksummed sstable footers.
const formatVersion = pebble.FormatTableFormatV6

// Pebble tuning for many small synced batches and range scans.
const (
	memTableBytes      = 64 << 20
	memTableStopWrites = 4
	bloomBitsPerKey    = 10 // point reads, idempotency checks mostly miss
	maxOpenFiles       = 1000

	// l0CompactAt is how many sublevels L0 gathers before it is
	// compacted into the level below, four times Pebble's default. A
	// flush spans every shard's keys, so each one is a sublevel over the
	// whole key space, and each compaction out of L0 rewrites the level
	// below it whole: gathering four times as many flushes first cuts the
	// bytes rewritten, at the price of more sublevels for a read to
	// check: a bloom filter probe each for a point read, a seek each for
	// an iterator's. docs/benchmarks.md, round thirteen.
	l0CompactAt = 16
	// l0StopWritesAt keeps Pebble's ratio of the stall to the compaction
	// threshold.
	l0StopWritesAt = 3 * l0CompactAt
)

// Store is Boomerang's durable state. All methods are safe for concurrent
// use.
type Store struct {
	db     *pebble.DB
	dir    string
	lock   *dirLock
	gate   *gate.Gate
	c      *counters
	log    *slog.Logger
	shards int
	floors floors    // where group order scans may start (floor.go)
	idem   *idemKeys // the idempotency keys held, hashed (idem.go)
	pins   *pinner   // holds Pebble's read states for the callers (pin.go)

	failure atomic.Pointer[error] // set once Pebble hit a fatal write error

	closeOnce sync.Once
	closeErr  error
}

// Open opens the store in dir, creating dir and a new store if it is
// missing or empty. See the package documentation for its errors.
func Open(dir string, o Options) (*Store, error) {
	if o.FS != nil {
		return open(dir, o, o.FS.vfs())
	}
	return open(dir, o, vfs.Default)
}

// open is Open over an arbitrary filesystem, for fault injection in tests.
func open(dir string, o Options, filesystem vfs.FS) (_ *Store, err error) {
	o.ensureDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("store: empty directory name")
	}
	if err := makeDir(filesystem, dir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	existed, err := inspectDir(filesystem, dir)
	if err != nil {
		return nil, err
	}
	lock, err := lockDir(dir, filesystem)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, lock: lock, gate: gate.New(), c: new(counters), log: o.Logger, pins: newPinner(o.pinOverlap)}
	opened := false
	defer func() {
		if !opened {
			if s.db != nil {
				_ = closeDB(s.db)
			}
			_ = lock.release()
		}
	}()
	// Pebble may give up through Fatalf while opening (a MANIFEST it
	// cannot write); that is an error of Open, not a crash.
	defer recoverFatal(&err)

	cache := pebble.NewCache(o.CacheBytes + memTableReserve(o))
	defer cache.Unref() // the DB holds its own reference
	s.db, err = pebble.Open(dir, pebbleOptions(o, filesystem, s.c, s.pins, lock, cache))
	if err != nil {
		return nil, openError(dir, existed, err)
	}
	if err := s.checkSchema(o.Shards); err != nil {
		return nil, err
	}
	if err := s.loadShards(o.Shards); err != nil {
		return nil, err
	}
	s.idem = newIdemKeys(s.shards)
	if err := s.idem.load(s.db); err != nil {
		return nil, err
	}
	s.pins.start(s.db)
	opened = true
	return s, nil
}

func pebbleOptions(o Options, filesystem vfs.FS, c *counters, pins *pinner, lock *dirLock, cache *pebble.Cache) *pebble.Options {
	logger := pebbleLogger{log: o.Logger}
	po := &pebble.Options{
		FS:                          countingFS{FS: filesystem, c: c},
		Lock:                        lock.pebbleLock,
		Cache:                       cache,
		FormatMajorVersion:          formatVersion,
		MemTableSize:                uint64(o.memTableBytes),
		MemTableStopWritesThreshold: memTableStopWrites,
		MaxOpenFiles:                maxOpenFiles,
		Logger:                      logger,
		EventListener:               eventListener(logger, c, pins),
		DisableAutomaticCompactions: o.manualCompactions,
		L0CompactionThreshold:       l0CompactAt,
		L0StopWritesThreshold:       l0StopWritesAt,
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	return po
}

// memTableReserve is what the cache given to Pebble holds beyond
// Options.CacheBytes: Pebble charges every memtable it allocates to the
// block cache, so a cache no larger than the memtables would hold no
// block at all. Two memtables (the one written and the one being flushed)
// are the usual case; more, during a burst of writes, borrow from the
// blocks.
func memTableReserve(o Options) int64 { return 2 * o.memTableBytes }

// makeDir creates dir and any missing parents, readable by the owner
// only, and syncs each new directory's parent so that the new entry
// survives a power loss.
func makeDir(filesystem vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	if _, err := filesystem.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := makeDir(filesystem, parent); err != nil {
			return err
		}
	}
	if err := filesystem.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	d, err := filesystem.OpenDir(parent)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkSchema writes the schema version into a new store and checks it in
// an existing one.
func (s *Store) checkSchema(shards int) error {
	v, closer, err := s.db.Get(schemaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return s.initSchema(cmp.Or(shards, DefaultShards))
	}
	if err != nil {
		return readError("read schema version", err)
	}
	defer closer.Close()
	version, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) {
		return corruptf("%s: schema version %x is not a varint", s.dir, v)
	}
	switch version {
	case SchemaVersion:
		return nil
	case 2:
		return s.migrateV2()
	case 1:
		if err := s.loadShards(shards); err != nil {
			return err
		}
		return s.migrateV1(s.log)
	}
	return fmt.Errorf("%w: %s has schema version %d; this build supports %d (and upgrades 1 and 2)",
		ErrSchema, s.dir, version, SchemaVersion)
}

// loadShards reads the store's number of shards: recorded when it was
// created, or legacyShards in a store from before the number was.
func (s *Store) loadShards(want int) error {
	v, closer, err := s.db.Get(shardsKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		s.shards = legacyShards
	case err != nil:
		return readError("read the shards", err)
	default:
		n, size := binary.Uvarint(v)
		closer.Close()
		if size <= 0 || n == 0 || n > MaxShards || n&(n-1) != 0 {
			return corruptf("%s: shards %x is not a power of two up to %d", s.dir, v, MaxShards)
		}
		s.shards = int(n)
	}
	if want != 0 && want != s.shards {
		return fmt.Errorf("%w: %s has %d shards, not %d: the number is fixed when a store is created", ErrSchema, s.dir, s.shards, want)
	}
	return nil
}

// initSchema marks a new, empty store with SchemaVersion and its number
// of shards. A Pebble
// database that holds data but no version was not written by Boomerang.
func (s *Store) initSchema(shards int) error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return readError("check for data", err)
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return readError("check for data", err)
	}
	if !empty {
		return corruptf("%s is not a store: it holds data but no schema version", s.dir)
	}
	b := s.db.NewBatch()
	_ = b.Set(schemaKey, binary.AppendUvarint(nil, SchemaVersion), nil)
	_ = b.Set(shardsKey, binary.AppendUvarint(nil, uint64(shards)), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("store: write schema version: %w", err)
	}
	// Pebble creates a store at its oldest format and upgrades it at the
	// end of Open, after it has started the first WAL in the old format,
	// which lacks sync offsets. Without them recovery cannot tell damage
	// followed by synced batches from a torn tail, and would silently drop
	// everything after the damage. A flush starts a new WAL in the current
	// format.
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("store: flush new store: %w", err)
	}
	return nil
}

// enter admits an operation; callers defer s.gate.Exit() when it is nil.
func (s *Store) enter() error {
	if !s.gate.Enter() {
		return ErrClosed
	}
	if f := s.failure.Load(); f != nil {
		s.gate.Exit()
		return *f
	}
	return nil
}

// fail records the first fatal error; every later operation returns it.
func (s *Store) fail(err error) {
	s.failure.CompareAndSwap(nil, &err)
}

// Close waits for operations in progress, closes Pebble and releases the
// directory. Later calls return the first call's result. Close must not
// be called from a scan callback.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		// Pebble panics when a closed DB is used, so Close must not close
		// it under a running Commit or scan.
		s.gate.Shut()
		_ = s.gate.Wait(context.Background())
		s.pins.close()
		err := closeDB(s.db)
		if lerr := s.lock.release(); err == nil && lerr != nil {
			err = fmt.Errorf("store: release lock: %w", lerr)
		}
		s.closeErr = err
	})
	return s.closeErr
}

// closeDB closes Pebble, which may also give up through Fatalf when its
// WAL cannot be closed cleanly.
func closeDB(db *pebble.DB) (err error) {
	defer recoverFatal(&err)
	if err := db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Dir returns the directory the store was opened in.
func (s *Store) Dir() string { return s.dir }

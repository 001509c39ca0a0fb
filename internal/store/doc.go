// Package store is Boomerang's durable state: tasks with their due, client
// and group order indexes, group state, dead letters, idempotency keys,
// per-shard high-water marks and registered clients, kept in one Pebble
// database.
// It is the only package that imports Pebble.
//
//	s, err := store.Open(dir, store.Options{Logger: log})
//	...
//	b := s.NewBatch()
//	b.PutTask(task)                 // record, due index, client index
//	b.PutGroup(group)               // next sequence, blocked head
//	b.PutShardMeta(shard, meta)     // id high-water mark, in the same batch
//	err = s.Commit(b)               // atomic, synced: now it may be acked
//
// # Key layout
//
// Every sharded key starts with a one-byte key-space tag and the shard as
// two bytes big-endian, so a shard's data is a handful of contiguous
// ranges that can be moved or replicated as a unit. Task ids carry their
// shard in the top 16 bits (MakeID, ShardOf); a group's shard is
// GroupShard(client, group). Integers are big-endian, so byte order is
// numeric order; strings are prefixed with their length as a uvarint, so
// ("a", "bc") and ("ab", "c") never collide. Values are protobuf records
// from storepb.
//
//	\x00schema                    → uvarint SchemaVersion; sorts before all
//	t shard id                    → Task
//	d shard wake id               → the due index (see WakeMs): GroupRef of an ordered task, else empty
//	o shard client group due seq id → empty: a group's order (ordered tasks only, see Ordered)
//	c shard client id             → empty: a client's tasks
//	g shard client group          → Group
//	b shard client group          → empty: the group is blocked (PutGroup adds it, UnblockGroup removes it)
//	i shard client key            → task id, creation time: 8 bytes each
//	x shard created client key    → empty: idempotency keys by age, for expiry
//	q shard id                    → DeadLetter, by DeadLetterID
//	r shard client id             → failure time (8 bytes), blocks its group (1 byte)
//	m shard                       → ShardMeta
//	p shard client group\x00key id → empty: tasks by replace key (groups and keys hold no NUL)
//	k client                      → Client (not sharded; the system group's)
//	s key                         → a session: auth's record, keyed by a hash of its id (the system group's)
//
// Here shard is 2 bytes, id and seq 8 bytes, and wake, due and created 8
// bytes: the int64 Unix milliseconds with the sign bit flipped, so
// negative times sort first. A scan of one shard's due index therefore
// returns entries in (wake, id) order, and a group's order index in
// (due, seq) order: the order the group runs its tasks in. A task's seq
// is its acceptance sequence, kept when a blocked head is revived.
// Because an id's top bits are its shard, key order across the shards of
// the t and q spaces is id order, which is what ListTasks and
// ListDeadLetters page by.
//
// Shards, GroupShard and the layout above are the on-disk format; changing
// any of them needs a new SchemaVersion.
//
// # Durability
//
// A Batch holds whole changes: each method adds a record and every index
// entry that belongs to it, or, if the record cannot be stored, nothing,
// and says why; the batch's other changes are unaffected. Commit applies
// a batch atomically (it is one WAL record) and returns only after the
// WAL is fsynced; only then may the change be acknowledged. Commits from many goroutines share fsyncs: while one fsync
// runs, Pebble's commit pipeline queues the batches that arrive and covers
// them all with the next one, so throughput grows with the number of
// concurrent committers instead of being capped at the disk's fsync rate.
// Stats counts commits and WAL fsyncs, measured below Pebble, to show it.
//
// Reads may see a batch as soon as Pebble has applied it in memory, which
// can be before its fsync completes. Callers that act on data (the
// scheduler's apply stage) do so after their own Commit returns, as the
// journal-then-apply design requires.
//
// A read never pays for Pebble's clean-up: the store's pinner holds each
// read state Pebble installs until the reads begun on the one before have
// ended, so that closing a caller's iterator is never what frees the
// tables a compaction replaced, with their thousands of cached blocks to
// evict (pin.go).
//
// Open creates a missing directory, and any missing parents, readable by
// its owner only, and syncs each new directory's parent, so that a power
// loss right after the first commit does not lose the directory that
// holds it.
//
// If a WAL write or fsync fails, Pebble cannot continue: the state in
// memory may no longer match the disk. Commit returns ErrFailed, whose
// batch may or may not be durable, and every later call returns ErrFailed
// too; the process should reopen the store, which recovers from disk.
// Pebble reports such failures through its logger's Fatalf; the logger
// here panics with a private value that Open, Commit and Close turn into
// ErrFailed. On one of Pebble's background goroutines (a failed MANIFEST
// write during a flush) the panic ends the process, as Pebble's own logger
// would.
//
// # Opening and recovery
//
// Open creates the directory and a new store if the directory is missing
// or empty, and writes the schema version. Otherwise:
//
//   - A directory holding other files and no store, or a Pebble database
//     holding data but no schema version, is refused with ErrCorrupt: a
//     mistyped path is reported, not filled.
//   - A store of schema 1 is upgraded in place (see migrateV1). Any other
//     schema version than SchemaVersion, or a Pebble format newer than
//     this build's Pebble, gives ErrSchema naming both versions.
//   - A directory another Store holds, in this process (under any path
//     that names it) or in another, gives ErrLocked.
//   - Damage Pebble detects or cannot make sense of gives ErrCorrupt with
//     the file and problem: a garbage, empty or missing MANIFEST; a missing
//     or dangling manifest marker; a missing or malformed format marker;
//     a garbage OPTIONS file; an sstable that is missing or whose size
//     disagrees with the MANIFEST; a damaged WAL record followed by
//     records that were synced. Errors from the environment (permissions,
//     I/O errors, a full or read-only disk) are returned as they are.
//
// Pebble recovers without an error from what a crash leaves behind, and
// from some damage it cannot tell apart from that:
//
//   - A torn WAL tail (a crash mid-write, or a truncated file): recovery
//     keeps every whole batch before the tear and drops the rest. A batch
//     is never half recovered.
//   - Damage inside the last 32 KiB block of the newest WAL looks like a
//     torn tail: recovery stops before the damaged record, and batches
//     after it in that block are lost without an error. Damage followed by
//     a later synced block is detected (the WAL format records how far it
//     was synced) and is ErrCorrupt. A new store's first WAL is rotated
//     right after creation so that it, too, records sync offsets.
//   - A truncated MANIFEST tail is read as a torn edit: the edits before
//     it stand.
//   - OPTIONS is advisory: an empty one is skipped. Pebble v2 keeps its
//     manifest pointer in marker files and never reads a CURRENT file.
//
// Damage inside an sstable block is found when the block is read: the
// read returns ErrCorrupt naming the file, and Stats counts it.
//
// # Errors
//
// Point reads return ErrNotFound for an absent record (ShardMeta returns
// the zero value instead). A record that does not decode, an index entry
// without its record, or a malformed key is ErrCorrupt. Commit returns
// ErrInvalid, applying nothing, for a batch holding an operation the store
// refuses. Every method returns ErrClosed after Close and ErrFailed after
// a fatal write error. Errors wrap these sentinels with detail; test with
// errors.Is.
//
// # Concurrency
//
// A Store is safe for concurrent use. A Batch belongs to one goroutine
// at a time. Scans and list calls read one consistent snapshot; their
// callbacks may call other read methods. Close waits for calls in
// progress, so it must not be called from a scan callback; calls that
// start once Close has begun return ErrClosed.
package store

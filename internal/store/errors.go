package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

var (
	// ErrNotFound is returned by point reads when the record is absent.
	ErrNotFound = errors.New("store: not found")

	// ErrSchema is returned by Open when the store was written with a
	// schema version this build does not support. The wrapping error names
	// the version found and the one supported.
	ErrSchema = errors.New("store: unsupported schema version")

	// ErrLocked is returned by Open when another Store, in this process or
	// another, has the directory open.
	ErrLocked = errors.New("store: directory is in use by another process")

	// ErrCorrupt is returned when data on disk cannot be trusted: a damaged
	// Pebble file (MANIFEST, OPTIONS, marker, sstable, WAL), a directory
	// that is not a store, or a record that fails to decode. The wrapping
	// error says which file, key or record.
	ErrCorrupt = errors.New("store: data is corrupt")

	// ErrClosed is returned by every method once Close has begun.
	ErrClosed = errors.New("store: closed")

	// ErrInvalid is returned by a Batch method for an operation the store
	// refuses (a task id of 0, a shard out of range, a record that cannot
	// be encoded). Nothing of that operation is added to the batch; the
	// rest of the batch is unaffected.
	ErrInvalid = errors.New("store: invalid record")

	// ErrFailed is returned once Pebble has hit an unrecoverable write
	// error (a failed WAL write or fsync). The store refuses every further
	// operation: what is in memory may differ from what is on disk, and
	// only a reopen, which recovers from disk, is safe.
	ErrFailed = errors.New("store: failed; reopen required")
)

// corruptf returns an error wrapping ErrCorrupt with detail.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// readError classifies an error from a Pebble read: corruption is marked
// with ErrCorrupt, anything else is returned with context.
func readError(op string, err error) error {
	if pebble.IsCorruptionError(err) {
		return corruptf("%s: %s", op, corruptionDetail(err))
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// openError classifies an error from pebble.Open. Corruption Pebble
// recognizes is ErrCorrupt. So is any other failure to make sense of an
// existing store's files (a missing MANIFEST or sstable, an sstable whose
// size disagrees with the MANIFEST, a lost format marker), unless it came
// from the environment: permissions, I/O errors, a full or read-only disk.
func openError(dir string, existed bool, err error) error {
	if pebble.IsCorruptionError(err) || (existed && !environmental(err)) {
		return corruptf("%s: %s", dir, corruptionDetail(err))
	}
	return fmt.Errorf("store: open %s: %w", dir, err)
}

func environmental(err error) bool {
	for _, target := range []error{
		fs.ErrPermission, syscall.EIO, syscall.ENOSPC, syscall.EROFS,
		syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EDQUOT,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// corruptionDetail describes a corruption error: the file and what is
// wrong with it, without Pebble's internal carrier text.
func corruptionDetail(err error) string {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		return fmt.Sprintf("%s: %v", info.Path, info.Details)
	}
	return err.Error()
}

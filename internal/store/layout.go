package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble's atomic markers are empty files whose names carry their value:
// marker.<name>.<iteration>.<value>. The manifest marker names the current
// MANIFEST; the format marker names Pebble's format major version.
const (
	manifestMarker = "marker.manifest."
	formatMarker   = "marker.format-version."
)

// inspectDir looks at the directory before Pebble does, to report in
// Boomerang's terms what Pebble would otherwise misread:
//
//   - a directory holding foreign files and no store is refused, so a
//     mistyped data directory is not filled with a new store;
//   - sstables or a format marker without a manifest marker mean the
//     marker was lost; Pebble would start an empty store beside the data;
//   - a format marker newer than this build's Pebble is a schema error.
//
// A directory with only Pebble's names and no manifest marker is a store
// whose creation was interrupted; Pebble decides what to do with it. It
// reports whether the directory holds a store.
func inspectDir(filesystem vfs.FS, dir string) (exists bool, err error) {
	names, err := filesystem.List(dir)
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	format, formatIter := "", int64(-1)
	hasTables := false
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, manifestMarker):
			exists = true
		case strings.HasPrefix(name, formatMarker):
			iter, value, _ := strings.Cut(strings.TrimPrefix(name, formatMarker), ".")
			n, err := strconv.ParseInt(iter, 10, 64)
			if err != nil {
				return false, corruptf("%s: malformed format marker %q", dir, name)
			}
			if n > formatIter {
				format, formatIter = value, n
			}
		case strings.HasSuffix(name, ".sst"), strings.HasSuffix(name, ".blob"):
			hasTables = true
		}
	}
	if !exists {
		if hasTables || format != "" {
			return false, corruptf("%s: the manifest marker (%s*) is missing", dir, manifestMarker)
		}
		for _, name := range names {
			if !isPebbleFile(name) {
				return false, corruptf("%s is not a store: it holds %q and no Pebble manifest", dir, name)
			}
		}
		return false, nil
	}
	if format != "" {
		v, err := strconv.ParseUint(format, 10, 64)
		if err != nil {
			return false, corruptf("%s: malformed format marker value %q", dir, format)
		}
		if v > uint64(pebble.FormatNewest) {
			return false, fmt.Errorf("%w: %s has Pebble format %d; this build supports up to %d",
				ErrSchema, dir, v, pebble.FormatNewest)
		}
	}
	return true, nil
}

// isPebbleFile reports whether name is one Pebble creates in its
// directory, or the lost+found of a filesystem's root.
func isPebbleFile(name string) bool {
	if name == "lost+found" {
		return true
	}
	for _, prefix := range []string{"LOCK", "OPTIONS-", "MANIFEST-", "marker.", "temporary."} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	for _, suffix := range []string{".log", ".sst", ".blob", ".dbtmp"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

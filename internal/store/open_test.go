package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestReopenKeepsCommittedData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := task("acme", "orders", 1, 1000)
	commit(t, s, func(b *Batch) {
		b.PutTask(want)
		b.PutShardMeta(ShardOf(want.Id), shardMeta(1))
	})
	closeStore(t, s)

	s = openStore(t, dir)
	got, err := s.Task(want.Id)
	if err != nil {
		t.Fatal(err)
	}
	assertProtoEqual(t, got, want)
	m, err := s.ShardMeta(ShardOf(want.Id))
	if err != nil || m.LastId != 1 {
		t.Fatalf("ShardMeta = %v, %v; want last_id 1 applied 7", m, err)
	}
}

func TestOpenCreatesMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	s := openStore(t, dir)
	if s.Dir() != dir {
		t.Fatalf("Dir() = %q, want %q", s.Dir(), dir)
	}
	v, closer, err := s.db.Get(schemaKey)
	if err != nil {
		t.Fatalf("schema version not written: %v", err)
	}
	defer closer.Close()
	if got, _ := binary.Uvarint(v); got != SchemaVersion {
		t.Fatalf("schema version %d, want %d", got, SchemaVersion)
	}
}

// setSchema overwrites the schema version value of the store in dir.
func setSchema(t *testing.T, dir string, value []byte) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(schemaKey, value, nil); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
}

func TestOpenNewerSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setSchema(t, dir, binary.AppendUvarint(nil, SchemaVersion+1))
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("Open = %v, want ErrSchema", err)
	}
	for _, v := range []string{fmt.Sprintf("version %d", SchemaVersion+1), fmt.Sprintf("supports %d", SchemaVersion)} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q does not name %q", err, v)
		}
	}
	// The refused store stays as it was: the lock was released and
	// nothing was rewritten.
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("second Open = %v, want ErrSchema again", err)
	}
}

func TestOpenNewerPebbleFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	closeStore(t, s)
	markers, _ := filepath.Glob(filepath.Join(dir, formatMarker+"*"))
	if len(markers) != 1 {
		t.Fatalf("format markers %v", markers)
	}
	iter, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(markers[0]), formatMarker), ".")
	if err := os.Rename(markers[0], filepath.Join(dir, formatMarker+iter+".999")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "999") {
		t.Fatalf("Open = %v, want ErrSchema naming format 999", err)
	}
}

func TestOpenGarbageSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setSchema(t, dir, []byte{0xff})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

func TestOpenNotAStore(t *testing.T) {
	t.Parallel()
	t.Run("foreign files", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "notes.txt") {
			t.Fatalf("Open = %v, want ErrCorrupt naming notes.txt", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "LOCK")); !os.IsNotExist(err) {
			t.Errorf("Open left a LOCK file in a foreign directory (%v)", err)
		}
	})
	t.Run("data without schema", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.Delete(schemaKey, nil); err != nil {
			t.Fatal(err)
		}
		commit(t, s, func(b *Batch) { b.PutClient(client("acme")) })
		closeStore(t, s)
		_, err = Open(dir, Options{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "no schema version") {
			t.Fatalf("Open = %v, want ErrCorrupt about the missing schema version", err)
		}
	})
	t.Run("a file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, Options{}); err == nil {
			t.Fatal("Open of a regular file succeeded")
		}
	})
}

func TestOpenLockedInProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	// Pebble's own in-process check compares path strings; these spell
	// the same directory differently.
	for _, path := range []string{dir, dir + "/.", link} {
		if _, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
			t.Errorf("second Open(%s) = %v, want ErrLocked", path, err)
		}
	}
	closeStore(t, s)
	s = openStore(t, link) // released on Close
	commit(t, s, func(b *Batch) { b.PutClient(client("acme")) })
}

// lockHolderEnv makes the test binary, started by TestOpenLockedByProcess,
// hold a store open instead of running tests.
const lockHolderEnv = "BOOMERANG_STORE_TEST_HOLD_LOCK"

// holdLock opens the store in dir, says so on stdout and keeps it open
// until stdin is closed.
func holdLock(dir string) int {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

func TestOpenLockedByProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		_ = stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("child: %q, %v", line, err)
	}

	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Errorf("Open while another process holds the store = %v, want ErrLocked", err)
	}

	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	openStore(t, dir) // the child's exit released it
}

// corruptibleStore returns the directory of a closed store whose data is
// split between an sstable (tasks 1-200) and the newest WAL (201-210).
func corruptibleStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(200) {
		commit(t, s, func(b *Batch) { b.PutTask(task("c", "g", i+1, int64(i))) })
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(10) {
		commit(t, s, func(b *Batch) { b.PutTask(task("c", "g", 201+i, int64(200+i))) })
	}
	closeStore(t, s)
	return dir
}

// newest returns the path of the newest file matching pattern in dir.
func newest(t *testing.T, dir, pattern string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(paths) == 0 {
		t.Fatalf("no %s in %s", pattern, dir)
	}
	return paths[len(paths)-1] // Pebble's file numbers are zero-padded
}

func overwrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncateHalf(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, offset int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], offset); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b[:], offset); err != nil {
		t.Fatal(err)
	}
}

var garbage = []byte("this is not what Pebble wrote here")

func TestOpenCorrupt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		mention string // what the error must name
	}{
		{"garbage MANIFEST", func(t *testing.T, dir string) { overwrite(t, newest(t, dir, "MANIFEST-*"), garbage) }, "MANIFEST"},
		{"empty MANIFEST", func(t *testing.T, dir string) { overwrite(t, newest(t, dir, "MANIFEST-*"), nil) }, "MANIFEST"},
		{"missing MANIFEST", func(t *testing.T, dir string) { remove(t, newest(t, dir, "MANIFEST-*")) }, "MANIFEST"},
		{"garbage OPTIONS", func(t *testing.T, dir string) { overwrite(t, newest(t, dir, "OPTIONS-*"), garbage) }, "invalid key=value"},
		{"truncated OPTIONS", func(t *testing.T, dir string) { truncateHalf(t, newest(t, dir, "OPTIONS-*")) }, "invalid key=value"},
		{"missing manifest marker", func(t *testing.T, dir string) { remove(t, newest(t, dir, manifestMarker+"*")) }, "marker"},
		{"dangling manifest marker", func(t *testing.T, dir string) {
			rename(t, newest(t, dir, manifestMarker+"*"), filepath.Join(dir, manifestMarker+"000001.MANIFEST-000099"))
		}, "MANIFEST-000099"},
		{"missing format marker", func(t *testing.T, dir string) { remove(t, newest(t, dir, formatMarker+"*")) }, "pristine"},
		{"garbage format marker", func(t *testing.T, dir string) {
			rename(t, newest(t, dir, formatMarker+"*"), filepath.Join(dir, formatMarker+"000001.garbage"))
		}, "format marker"},
		{"garbage sstable", func(t *testing.T, dir string) { overwrite(t, newest(t, dir, "*.sst"), garbage) }, "size mismatch"},
		{"truncated sstable", func(t *testing.T, dir string) { truncateHalf(t, newest(t, dir, "*.sst")) }, "size mismatch"},
		{"missing sstable", func(t *testing.T, dir string) { remove(t, newest(t, dir, "*.sst")) }, "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := corruptibleStore(t)
			c.damage(t, dir)
			_, err := Open(dir, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %q does not mention %q", err, c.mention)
			}
			// A refused store releases its lock: the next Open fails
			// the same way rather than with ErrLocked.
			if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("second Open = %v, want ErrCorrupt again", err)
			}
		})
	}
}

// TestReadCorruptSSTable: damage inside an sstable block is found when the
// block is read, which may be long after Open.
func TestReadCorruptSSTable(t *testing.T) {
	t.Parallel()
	dir := corruptibleStore(t)
	flipByte(t, newest(t, dir, "*.sst"), 100) // the first block: client index entries
	s := openStore(t, dir)
	_, _, err := s.ListTasks(TaskQuery{Client: "c", Group: "g"})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("ListTasks = %v, want ErrCorrupt naming a checksum mismatch", err)
	}
	if !strings.Contains(err.Error(), ".sst") {
		t.Errorf("error %q does not name the file", err)
	}
	if n := s.Stats().Corruptions; n == 0 {
		t.Error("Stats().Corruptions = 0 after a checksum mismatch")
	}
}

// TestOpenToleratedDamage pins what Pebble recovers from without an error.
func TestOpenToleratedDamage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		tasks  int // tasks left, out of 210
	}{
		// Pebble v2 keeps its manifest pointer in marker files; a CURRENT
		// file is not read.
		{"garbage CURRENT", func(t *testing.T, dir string) { overwrite(t, filepath.Join(dir, "CURRENT"), garbage) }, 210},
		// OPTIONS is advisory: an empty one is skipped.
		{"empty OPTIONS", func(t *testing.T, dir string) { overwrite(t, newest(t, dir, "OPTIONS-*"), nil) }, 210},
		// A torn WAL tail is what a crash leaves: recovery keeps every
		// whole batch before the tear. The last 10 tasks are in the newest
		// WAL, one batch each, so cutting it in half keeps 5 of them.
		{"truncated WAL tail", func(t *testing.T, dir string) { truncateHalf(t, newest(t, dir, "*.log")) }, 205},
		// Within the newest WAL's last 32 KiB block a damaged record
		// cannot be told from a torn write: recovery stops before it.
		{"garbage in the last WAL block", func(t *testing.T, dir string) { flipByte(t, newest(t, dir, "*.log"), 100) }, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := corruptibleStore(t)
			c.damage(t, dir)
			s := openStore(t, dir)
			tasks, _, err := s.ListTasks(TaskQuery{Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != c.tasks {
				t.Fatalf("%d tasks after recovery, want %d", len(tasks), c.tasks)
			}
			for i, tk := range tasks { // a prefix of the batches, in commit order
				if CounterOf(tk.Id) != uint64(i+1) {
					t.Fatalf("task %d has counter %d: recovery kept a batch after a lost one", i, CounterOf(tk.Id))
				}
			}
		})
	}
}

// TestOpenCorruptWALBeforeSyncedData checks the other side of the torn
// tail rule: damage followed by records that were synced is corruption,
// not a tail to drop.
func TestOpenCorruptWALBeforeSyncedData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(100) { // about 100 KiB: several 32 KiB WAL blocks
		tk := task("c", "g", i+1, int64(i))
		tk.Payload = make([]byte, 1000)
		commit(t, s, func(b *Batch) { b.PutTask(tk) })
	}
	closeStore(t, s)
	flipByte(t, newest(t, dir, "*.log"), 1000)
	s, err = Open(dir, Options{})
	if err == nil {
		closeStore(t, s)
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "WAL") {
		t.Fatalf("Open = %v, want ErrCorrupt about the WAL", err)
	}
}

// TestOpenRandomDamageNeverPanics damages each file of a store at random
// and checks that Open and full reads end in an error or in data, never in
// a panic, and that every error from damage is classified.
func TestOpenRandomDamageNeverPanics(t *testing.T) {
	t.Parallel()
	base := corruptibleStore(t)
	names, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const tries = 8
	for _, entry := range names {
		if entry.Name() == "LOCK" || strings.HasPrefix(entry.Name(), "marker.") {
			continue
		}
		for try := range tries {
			dir := copyDir(t, base)
			path := filepath.Join(dir, entry.Name())
			data, err := os.ReadFile(path)
			if err != nil || len(data) == 0 {
				continue
			}
			data, what := damageRandomly(rng, data)
			overwrite(t, path, data)
			t.Run(fmt.Sprintf("%s/%d", entry.Name(), try), func(t *testing.T) {
				s, err := Open(dir, Options{})
				if err != nil {
					if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("%s %s: Open = %v, want nil or ErrCorrupt", what, entry.Name(), err)
					}
					return
				}
				defer closeStore(t, s)
				_, _, err = s.ListTasks(TaskQuery{Limit: MaxLimit})
				if err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s %s: ListTasks = %v, want nil or ErrCorrupt", what, entry.Name(), err)
				}
			})
		}
	}
}

func damageRandomly(rng *rand.Rand, data []byte) ([]byte, string) {
	off := rng.IntN(len(data))
	switch rng.IntN(4) {
	case 0:
		return data[:off], fmt.Sprintf("truncated to %d", off)
	case 1:
		clear(data[off:]) // what a lost tail looks like in a preallocated file
		return data, fmt.Sprintf("zeroed from %d", off)
	case 2:
		for i := off; i < min(off+16, len(data)); i++ {
			data[i] = byte(rng.UintN(256))
		}
		return data, fmt.Sprintf("random bytes at %d", off)
	default:
		data[off] ^= 1 << rng.IntN(8)
		return data, fmt.Sprintf("bit flip at %d", off)
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		overwrite(t, filepath.Join(dst, e.Name()), data)
	}
	return dst
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openDirs lists the directories Stores of this process hold. Pebble's
// lock is an fcntl lock, which never conflicts within one process, and its
// own in-process check compares path strings, so two spellings of one
// directory would both get in. Comparing files (device and inode) closes
// that gap.
var openDirs struct {
	sync.Mutex
	infos []os.FileInfo
}

// dirLock is the exclusive hold a Store has on its directory.
type dirLock struct {
	info       os.FileInfo
	pebbleLock *pebble.Lock
}

// lockDir registers dir in this process, then takes Pebble's file lock,
// which other processes respect.
func lockDir(dir string, filesystem vfs.FS) (*dirLock, error) {
	l := &dirLock{}
	if vfs.Root(filesystem) == vfs.Default {
		if err := l.register(dir); err != nil {
			return nil, err
		}
	}
	var err error
	l.pebbleLock, err = pebble.LockDirectory(dir, filesystem)
	if err != nil {
		l.unregister()
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			// Creating the LOCK file failed: permissions, read-only disk.
			return nil, fmt.Errorf("store: lock %s: %w", dir, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
	}
	return l, nil
}

// register claims dir among the directories of this process's Stores.
func (l *dirLock) register(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	openDirs.Lock()
	for _, held := range openDirs.infos {
		if os.SameFile(held, info) {
			openDirs.Unlock()
			return fmt.Errorf("%w: %s is open in this process", ErrLocked, dir)
		}
	}
	openDirs.infos = append(openDirs.infos, info)
	openDirs.Unlock()
	l.info = info
	return nil
}

func (l *dirLock) unregister() {
	if l.info == nil {
		return
	}
	openDirs.Lock()
	defer openDirs.Unlock()
	for i, held := range openDirs.infos {
		if held == l.info {
			openDirs.infos = append(openDirs.infos[:i], openDirs.infos[i+1:]...)
			return
		}
	}
}

// release drops the file lock, then the registration.
func (l *dirLock) release() error {
	err := l.pebbleLock.Close()
	l.unregister()
	return err
}

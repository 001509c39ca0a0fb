package store

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// MemFS is an in-memory filesystem for tests: a store on it can lose
// power, and its writes can be made to fail. Set Options.FS to use it.
type MemFS struct {
	mem       *vfs.MemFS
	failing   *atomic.Bool
	syncDelay *atomic.Int64 // nanoseconds each sync takes
	hold      *syncHold
}

// syncHold holds syncs back while held.
type syncHold struct {
	mu      sync.Mutex
	held    bool
	release chan struct{} // closed when no longer held
}

// NewMemFS returns an empty MemFS.
func NewMemFS() *MemFS {
	return &MemFS{mem: vfs.NewCrashableMem(), failing: new(atomic.Bool), syncDelay: new(atomic.Int64), hold: new(syncHold)}
}

// Crash returns the filesystem a machine would find after a power loss at
// this moment: exactly what was synced, files and directory entries
// alike. The receiver is unchanged; whatever still uses it goes on
// writing to it, and none of that reaches the copy.
func (m *MemFS) Crash() *MemFS {
	c := NewMemFS()
	c.mem = m.mem.CrashClone(vfs.CrashCloneCfg{})
	return c
}

// SyncDelay makes every sync take d, as a real disk's does, so that more
// happens while data is written but not yet durable.
func (m *MemFS) SyncDelay(d time.Duration) { m.syncDelay.Store(int64(d)) }

// HoldSyncs makes every sync wait, while hold is true, until HoldSyncs
// is called with false: a disk whose syncs take as long as a test needs.
// Release syncs held this way before closing a store on m.
func (m *MemFS) HoldSyncs(hold bool) {
	h := m.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case hold && !h.held:
		h.held, h.release = true, make(chan struct{})
	case !hold && h.held:
		h.held = false
		close(h.release)
	}
}

// wait returns once syncs are not held.
func (h *syncHold) wait() {
	h.mu.Lock()
	held, release := h.held, h.release
	h.mu.Unlock()
	if held {
		<-release
	}
}

// FailWrites makes every write, sync and file creation fail while fail is
// true, as a disk that has gone bad would.
func (m *MemFS) FailWrites(fail bool) { m.failing.Store(fail) }

// ErrInjected is the error of an operation FailWrites made fail.
var ErrInjected = errorfs.ErrInjected

// Exists reports whether name exists on the filesystem.
func (m *MemFS) Exists(name string) bool {
	_, err := m.mem.Stat(name)
	return err == nil
}

func (m *MemFS) vfs() vfs.FS {
	return errorfs.Wrap(m.mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if m.failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		if op.Kind != errorfs.OpFileSync && op.Kind != errorfs.OpFileSyncData && op.Kind != errorfs.OpFileSyncTo {
			return nil
		}
		if d := m.syncDelay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		m.hold.wait()
		return nil
	}))
}

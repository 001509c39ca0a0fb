package store

import (
	"sync"
	"sync/atomic"
)

// gate lets Close wait for operations in progress without a lock on every
// read: Pebble panics when a closed DB is used, so Close must not close it
// under a running Commit or scan. Operations enter and exit; Close shuts
// the gate and waits until the last one has left.
//
// Unlike a RWMutex, a nested enter (a Task read inside a ScanDue callback)
// cannot deadlock against a waiting Close: it fails with ErrClosed instead.
type gate struct {
	state   atomic.Uint64 // operations inside, plus shutBit once shut
	drained chan struct{} // closed when shut and empty
	once    sync.Once
}

const shutBit = 1 << 63

func newGate() *gate { return &gate{drained: make(chan struct{})} }

// enter admits an operation; the caller must call exit if it returns true.
func (g *gate) enter() bool {
	if g.state.Add(1)&shutBit != 0 {
		g.exit()
		return false
	}
	return true
}

func (g *gate) exit() {
	if g.state.Add(^uint64(0)) == shutBit {
		g.once.Do(func() { close(g.drained) })
	}
}

// shut refuses new operations and waits for those inside. It reports
// whether this call shut the gate (false: it was already shut).
func (g *gate) shut() bool {
	old := g.state.Or(shutBit)
	if old&shutBit != 0 {
		return false
	}
	if old == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	<-g.drained
	return true
}

// Package gate lets a component's Close refuse new operations and wait for
// the ones in progress, without a lock on every operation.
//
// Operations Enter and Exit; Close calls Shut, then Wait. Unlike a
// RWMutex, an Enter after Shut (a nested one included) fails at once
// instead of blocking, so it cannot deadlock against a waiting Close.
package gate

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate counts the operations inside. The zero value is not usable; call
// New.
type Gate struct {
	state   atomic.Uint64 // operations inside, plus shutBit once shut
	drained chan struct{} // closed when shut and empty
	once    sync.Once
}

const shutBit = 1 << 63

// New returns an open gate.
func New() *Gate { return &Gate{drained: make(chan struct{})} }

// Enter admits an operation and reports whether it may go on; after true
// the caller must call Exit when it is done.
func (g *Gate) Enter() bool {
	if g.state.Add(1)&shutBit != 0 {
		g.Exit()
		return false
	}
	return true
}

// Exit ends an operation Enter admitted.
func (g *Gate) Exit() {
	if g.state.Add(^uint64(0)) == shutBit {
		g.once.Do(func() { close(g.drained) })
	}
}

// Shut refuses new operations from now on. It reports whether this call
// shut the gate (false: it was already shut).
func (g *Gate) Shut() bool {
	old := g.state.Or(shutBit)
	if old&shutBit != 0 {
		return false
	}
	if old == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	return true
}

// IsShut reports whether Shut was called.
func (g *Gate) IsShut() bool { return g.state.Load()&shutBit != 0 }

// Wait returns nil once the gate is shut and the last operation has
// left, or ctx's error if ctx ends first.
func (g *Gate) Wait(ctx context.Context) error {
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

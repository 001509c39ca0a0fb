package delivery

import (
	"context"
	"sync"
	"sync/atomic"
)

// gate counts the attempts the engine has taken and not yet finished, so
// Close can refuse new ones and wait for the rest without a lock on every
// Deliver.
type gate struct {
	state   atomic.Uint64 // attempts inside, plus shutBit once shut
	drained chan struct{} // closed when shut and empty
	once    sync.Once
}

const shutBit = 1 << 63

func newGate() *gate { return &gate{drained: make(chan struct{})} }

// enter admits an attempt; the caller must call exit if it returns true.
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

// shut refuses new attempts. It reports whether this call shut the gate.
func (g *gate) shut() bool {
	old := g.state.Or(shutBit)
	if old&shutBit != 0 {
		return false
	}
	if old == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	return true
}

// wait returns once the gate is shut and empty, or ctx ends.
func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

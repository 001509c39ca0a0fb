package gate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

func TestShutWaitsForOperationsInside(t *testing.T) {
	g := New()
	if !g.Enter() {
		t.Fatal("Enter on an open gate refused")
	}
	if !g.Shut() {
		t.Fatal("first Shut reported the gate already shut")
	}
	if g.Shut() {
		t.Fatal("second Shut reported shutting the gate")
	}
	if g.Enter() {
		t.Fatal("Enter after Shut admitted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Wait(ctx); err == nil {
		t.Fatal("Wait returned nil with an operation inside")
	}
	g.Exit()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after the last Exit: %v", err)
	}
}

func TestShutWhenEmpty(t *testing.T) {
	g := New()
	g.Shut()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Many goroutines entering and exiting while the gate shuts: Wait returns
// only after every admitted operation has exited.
func TestConcurrentEnterAndShut(t *testing.T) {
	for range 500 {
		g := New()
		var wg sync.WaitGroup
		var active atomic.Int64
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				for range 200 {
					if !g.Enter() {
						return
					}
					active.Add(1)
					active.Add(-1)
					g.Exit()
				}
			})
		}
		close(start)
		g.Shut()
		if err := g.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := active.Load(); n != 0 {
			t.Fatalf("Wait returned with %d operations inside", n)
		}
		if g.Enter() {
			t.Fatal("Enter after Shut admitted")
		}
		wg.Wait()
	}
}

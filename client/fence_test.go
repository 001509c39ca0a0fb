package client

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

func TestFenceAdmit(t *testing.T) {
	f := NewFence(0)
	for i, step := range []struct {
		key  string
		term uint64
		want bool
	}{
		{"c/a", 3, true},  // first seen
		{"c/a", 3, true},  // the same leader again (a retry)
		{"c/a", 2, false}, // a replaced leader
		{"c/a", 4, true},  // a newer leader
		{"c/a", 3, false},
		{"c/b", 1, true}, // another group's terms are not compared
		{"c/b", 0, false},
		{"c/a", 4, true},
	} {
		if got := f.Admit(step.key, step.term); got != step.want {
			t.Fatalf("step %d: Admit(%q, %d) = %v, want %v", i, step.key, step.term, got, step.want)
		}
	}
	if f.Stale() != 3 {
		t.Fatalf("Stale() = %d, want 3", f.Stale())
	}
}

func TestFenceKey(t *testing.T) {
	keys := map[string]*boomerangv1.Delivery{}
	for _, d := range []*boomerangv1.Delivery{
		{Client: "billing", Group: "customer 7", TaskId: 1},
		{Client: "billing", TaskId: 1},
		{Client: "billing", TaskId: 2},
		{Client: "billing", Group: "#1", TaskId: 3}, // a group named like an ungrouped key
		{Client: "billing", Group: "x/y", TaskId: 4},
		{Client: "billing/x", Group: "y", TaskId: 5}, // cannot happen: client ids hold no "/"
		{Client: "shipping", Group: "customer 7", TaskId: 6},
	} {
		k := FenceKey(d)
		if other, dup := keys[k]; dup && d.Client != "billing/x" {
			t.Errorf("%v and %v share the key %q", other, d, k)
		}
		keys[k] = d
	}
	a := &boomerangv1.Delivery{Client: "billing", Group: "customer 7", TaskId: 1, Term: 1}
	b := &boomerangv1.Delivery{Client: "billing", Group: "customer 7", TaskId: 2, Term: 9}
	if FenceKey(a) != FenceKey(b) {
		t.Errorf("tasks of one group have keys %q and %q", FenceKey(a), FenceKey(b))
	}
	if got := FenceKey(&boomerangv1.Delivery{Client: "billing", TaskId: 281474976710657}); got != "billing#281474976710657" {
		t.Errorf("ungrouped key %q", got)
	}
}

// The fence against a reference model: the highest term per key, and the
// keys in order of last use, the least recent forgotten beyond capacity.
func TestFenceModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.IntRange(1, 6).Draw(rt, "capacity")
		f := NewFence(capacity)
		highest := map[string]uint64{}
		var recent []string // least recently used first
		var stale uint64
		keys := rapid.SampledFrom([]string{"c/a", "c/b", "c/c", "c#1", "c#2", "d/a", "d#1", "e/a"})
		rt.Repeat(map[string]func(*rapid.T){
			"admit": func(rt *rapid.T) {
				key := keys.Draw(rt, "key")
				term := rapid.Uint64Range(0, 8).Draw(rt, "term")
				h, seen := highest[key]
				want := !seen || term >= h
				if got := f.Admit(key, term); got != want {
					rt.Fatalf("Admit(%q, %d) = %v, want %v (highest %d, seen %v)", key, term, got, want, h, seen)
				}
				if i := slices.Index(recent, key); i >= 0 {
					recent = slices.Delete(recent, i, i+1)
				} else if len(recent) == capacity {
					delete(highest, recent[0])
					recent = recent[1:]
				}
				recent = append(recent, key)
				if want {
					highest[key] = term
				} else {
					stale++
				}
			},
			"": func(rt *rapid.T) {
				if f.Stale() != stale {
					rt.Fatalf("Stale() = %d, want %d", f.Stale(), stale)
				}
			},
		})
	})
}

// Goroutines racing to admit terms 1..n of one key in random orders,
// each also admitting rising terms of a key of its own: every call on
// the shared key is admitted or counted stale, the others are all
// admitted, and afterwards only the highest term is.
func TestFenceConcurrentAdmits(t *testing.T) {
	const goroutines, n = 8, 2000
	f := NewFence(16)
	var admitted atomic.Uint64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			own := "c#" + strconv.Itoa(g)
			for i, term := range r.Perm(n) {
				if f.Admit("c/hot", uint64(term+1)) {
					admitted.Add(1)
				}
				if !f.Admit(own, uint64(i)) {
					t.Errorf("%s: term %d refused", own, i)
				}
			}
		})
	}
	wg.Wait()
	if got := admitted.Load() + f.Stale(); got != goroutines*n {
		t.Fatalf("%d admitted + %d stale, want %d calls", admitted.Load(), f.Stale(), goroutines*n)
	}
	if !f.Admit("c/hot", n) || f.Admit("c/hot", n-1) {
		t.Fatalf("after the race, term %d is not the highest", n)
	}
}

// A wrapped handler runs for admitted deliveries only and acknowledges
// stale ones.
func TestFenceWrap(t *testing.T) {
	f := NewFence(0)
	var ran []uint64
	h := f.Wrap(func(_ context.Context, d *boomerangv1.Delivery) error {
		ran = append(ran, d.TaskId)
		return nil
	})
	for _, d := range []*boomerangv1.Delivery{
		{TaskId: 1, Client: "c", Group: "g", Term: 2},
		{TaskId: 2, Client: "c", Group: "g", Term: 1}, // from a replaced leader
		{TaskId: 3, Client: "c", Group: "h", Term: 1},
		{TaskId: 4, Client: "c", Term: 1},
		{TaskId: 4, Client: "c", Term: 2},
		{TaskId: 4, Client: "c", Term: 1}, // the replaced leader, late
		{TaskId: 5, Client: "c", Group: "g", Term: 2},
	} {
		if err := h(context.Background(), d); err != nil {
			t.Fatalf("task %d: %v", d.TaskId, err)
		}
	}
	if want := []uint64{1, 3, 4, 4, 5}; !slices.Equal(ran, want) {
		t.Fatalf("handler ran for %v, want %v", ran, want)
	}
	if f.Stale() != 2 {
		t.Fatalf("Stale() = %d, want 2", f.Stale())
	}
}

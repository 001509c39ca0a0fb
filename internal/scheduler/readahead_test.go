package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The records of tasks about to fire are read into their partition's
// cache before they are due, and a change made after that read is what
// fires.
func TestTasksAboutToFireAreReadAhead(t *testing.T) {
	h := newHarness(t, nil)
	const n = 40
	var ids []uint64
	for i := range n {
		v := h.register(RegisterRequest{Payload: payload(fmt.Sprint("p", i)), Delay: 20 * time.Second})
		ids = append(ids, v.Task.Id)
	}
	h.restart() // the new loops have read none of the records
	cached := func() int {
		t.Helper()
		k := 0
		for _, p := range h.s.parts {
			_, err := h.s.call(context.Background(), p, func(done func(result)) {
				for _, id := range ids {
					if _, ok := p.tasks.Task(id); ok {
						k++
					}
				}
				done(result{})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return k
	}
	h.settle()
	if k := cached(); k != 0 {
		t.Fatalf("%d of %d records cached 20 s before they are due, want none", k, n)
	}
	// 10 ms before they are due (in the same turn of the wheel's lowest
	// level, 256 ticks from the wheel's start at the fake epoch).
	h.advance(20*time.Second - 10*time.Millisecond)
	if k := cached(); k != n {
		t.Fatalf("%d of %d records cached 10 ms before they are due, want all", k, n)
	}

	ctx, c := context.Background(), Caller{Client: "acme"}
	if err := h.s.Cancel(ctx, c, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Update(ctx, c, UpdateRequest{ID: ids[1], Payload: payload("changed")}); err != nil {
		t.Fatal(err)
	}
	h.advance(10 * time.Millisecond)
	got := make(map[uint64]string)
	for range n - 1 {
		a := h.next()
		got[a.Task.Id] = string(a.Task.Payload)
		a.done(nil)
	}
	h.settle()
	h.none()
	if p, ok := got[ids[0]]; ok {
		t.Errorf("cancelled task fired with %q", p)
	}
	if p := got[ids[1]]; p != "changed" {
		t.Errorf("updated task fired with %q, want %q", p, "changed")
	}
	for i, id := range ids[2:] {
		if p, want := got[id], fmt.Sprint("p", i+2); p != want {
			t.Errorf("task %d fired with %q, want %q", i+2, p, want)
		}
	}
}

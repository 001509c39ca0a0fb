package scheduler

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Many tasks due at once exceed the delivery slots: the rest wait in the
// ready queue, in order, and every task is delivered exactly once, each
// group in registration order.
func TestReadyQueueDeliversEveryTaskOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[uint64]int{}
	groups := map[string][]int{}
	h := newHarness(t, func(c *Config) { c.MaxDelivering = 4 })
	h.del.auto = func(d Delivery) (error, bool) {
		n, _ := strconv.Atoi(string(d.Task.Payload))
		mu.Lock()
		seen[d.Task.Id]++
		groups[d.Task.Group] = append(groups[d.Task.Group], n)
		mu.Unlock()
		return nil, true
	}
	const n = 300
	for i := range n {
		group := ""
		if i%2 == 0 {
			group = fmt.Sprint("g", i%6)
		}
		h.register(RegisterRequest{Payload: payload(strconv.Itoa(i)), Group: group, Delay: time.Second})
	}
	h.advance(time.Second)
	deadline := time.Now().Add(waitLimit)
	for h.s.Stats().Delivered < n && time.Now().Before(deadline) {
		h.roundTrip()
	}
	h.settle()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("%d of %d tasks delivered", len(seen), n)
	}
	for id, times := range seen {
		if times != 1 {
			t.Errorf("task %d delivered %d times", id, times)
		}
	}
	for g, order := range groups {
		if g == "" {
			continue
		}
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Fatalf("group %s delivered out of order: %v", g, order)
			}
		}
	}
}

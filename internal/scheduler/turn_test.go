package scheduler

import (
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

// A turn of the loop starts what is due before it handles its inbox: a
// message that waits in the inbox when a task falls due finds the task's
// attempt already under way.
func TestTurnStartsDueTasksBeforeItsInbox(t *testing.T) {
	h := newHarness(t, nil)
	v := h.register(RegisterRequest{Payload: payload("due"), Delay: time.Second})
	h.settle()
	p := h.s.partitionOf(store.ShardOf(v.Task.Id))
	attempts := make(chan int, 1)
	// Queued without waking the loop, which sleeps until the task is due.
	p.inbox.mu.Lock()
	p.inbox.msgs = append(p.inbox.msgs, func() { attempts <- len(h.del.attempts) })
	p.inbox.mu.Unlock()
	h.clock.Advance(time.Second)
	select {
	case n := <-attempts:
		if n != 1 {
			t.Fatalf("the message ran with %d attempts under way, want the due task's", n)
		}
	case <-time.After(waitLimit):
		t.Fatal("the loop never ran the message")
	}
	h.ack(h.expect("due", 1))
}

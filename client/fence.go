package client

import (
	"context"
	"strconv"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// DefaultFenceCapacity is how many keys a Fence remembers when NewFence
// is given no capacity.
const DefaultFenceCapacity = 100_000

// Fence drops deliveries sent by a shard leader that has been replaced.
//
// Every delivery carries the Raft term in which its sender leads the
// task's shard (Delivery.Term, from 1). Terms only grow from one leader
// to the next, so once a receiver has seen term T for a group, a
// delivery for that group with a lower term comes from a leader that was
// replaced: one cut off from its cluster, or slow, may still deliver for
// a short while. That leader can no longer record any outcome, so its
// delivery may be dropped: the task is in the new leader's hands, which
// delivers it again unless its own delivery already settled it.
//
// A Fence keeps the highest term it admitted per key. FenceKey names the
// key of a delivery: its client and group, or for an ungrouped task its
// client and task id. Terms of different keys are never compared: groups
// live in shards with independent terms.
//
// Memory is bounded: a Fence remembers at most its capacity of keys
// (DefaultFenceCapacity unless NewFence says otherwise), forgetting the
// least recently used one to make room, at about 120 bytes plus the
// key's length each (some 15 MB for the default with 30-byte keys). A forgotten key's next delivery is admitted whatever
// its term, so size the capacity above the keys that receive deliveries
// within a few seconds, the time a replaced leader may go on delivering.
//
// A Fence only knows what its own process has seen: receivers behind a
// load balancer each keep their own. Fencing drops late deliveries from
// replaced leaders; it does not make delivery exactly once, so keep
// deduplicating by (task id, fire time).
//
// A Fence is safe for concurrent use.
type Fence struct {
	mu    sync.Mutex
	terms *simplelru.LRU[string, uint64] // key → highest term admitted
	stale uint64
}

// NewFence returns a Fence that remembers at most capacity keys; 0 or
// less means DefaultFenceCapacity.
func NewFence(capacity int) *Fence {
	if capacity <= 0 {
		capacity = DefaultFenceCapacity
	}
	// NewLRU fails only for a capacity below 1.
	terms, _ := simplelru.NewLRU[string, uint64](capacity, nil)
	return &Fence{terms: terms}
}

// Admit reports whether a delivery in term may be processed under key:
// true when term is at least the highest term admitted for key so far
// (it then becomes the highest), false when it is lower.
func (f *Fence) Admit(key string, term uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if highest, seen := f.terms.Get(key); seen && term < highest {
		f.stale++
		return false
	}
	f.terms.Add(key, term)
	return true
}

// Stale returns how many deliveries Admit has refused.
func (f *Fence) Stale() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stale
}

// FenceKey is the key a delivery is fenced under: "client/group", or
// for an ungrouped task "client#task-id". A client id never holds "/" or
// "#", so two deliveries share a key only when they share a client and
// a group, or a task.
func FenceKey(d *boomerangv1.Delivery) string {
	if d.GetGroup() != "" {
		return d.GetClient() + "/" + d.GetGroup()
	}
	return d.GetClient() + "#" + strconv.FormatUint(d.GetTaskId(), 10)
}

// Wrap returns a Handler, for any receiver, that passes h the deliveries
// f admits under FenceKey, and acknowledges the others without calling h:
//
//	fence := client.NewFence(0)
//	r, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: secret, Handler: fence.Wrap(handle)})
//
// A stale delivery is answered with success, not an error. Either is
// safe: its sender no longer leads the task's shard, so the outcome it
// records cannot take effect, and the task stays with the new leader.
// Success ends the stale attempt at once; an error would have the
// replaced leader retry against this receiver until it learns that it
// was replaced, and count failures that are not the receiver's.
func (f *Fence) Wrap(h Handler) Handler {
	return func(ctx context.Context, d *boomerangv1.Delivery) error {
		if !f.Admit(FenceKey(d), d.GetTerm()) {
			return nil
		}
		return h(ctx, d)
	}
}

package history

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/boomerangd/boomerang/internal/store"
)

// Violation is one broken guarantee.
type Violation struct {
	Kind   string // one of the Kind constants
	Detail string
}

func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// The kinds of violation.
const (
	KindDuplicateID     = "duplicate id"
	KindLost            = "lost"
	KindUnknown         = "unknown delivery"
	KindEarly           = "early"
	KindAfterCancel     = "delivered after cancel"
	KindOrder           = "group order"
	KindInFlight        = "two in flight"
	KindUnaskedFireTime = "unasked fire time"
)

// Check returns every violation in the history (see the package
// comment), in a stable order.
func (h *History) Check() []Violation {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := checker{h: h, byID: map[uint64]*Registration{}, byKey: map[string]*Registration{}}
	c.ids()
	c.lost()
	c.deliveries()
	c.cancelled()
	c.groups()
	return c.out
}

type checker struct {
	h     *History
	byID  map[uint64]*Registration // acknowledged ones
	byKey map[string]*Registration // every one asked, acknowledged if ever
	out   []Violation
}

func (c *checker) add(kind, format string, args ...any) {
	c.out = append(c.out, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// ids indexes the registrations and checks that ids and keys match one
// to one.
func (c *checker) ids() {
	for i := range c.h.registrations {
		r := &c.h.registrations[i]
		if prev, ok := c.byKey[r.Key]; !ok || !prev.Acked {
			c.byKey[r.Key] = r
		} else if r.Acked && prev.ID != r.ID {
			c.add(KindDuplicateID, "key %s acknowledged as task %d and as task %d", r.Key, prev.ID, r.ID)
		}
		if !r.Acked {
			continue
		}
		if prev, ok := c.byID[r.ID]; ok && prev.Key != r.Key {
			c.add(KindDuplicateID, "task %d acknowledged for keys %s and %s", r.ID, prev.Key, r.Key)
			continue
		}
		c.byID[r.ID] = r
	}
}

// lost checks that every acknowledged registration no cancel was tried
// on was delivered.
func (c *checker) lost() {
	delivered, cancelled := map[uint64]bool{}, mayBeCancelled(c.h.cancels)
	for _, d := range c.h.deliveries {
		delivered[d.TaskID] = true
	}
	for _, r := range c.h.registrations {
		if r.Acked && !delivered[r.ID] && !cancelled[r.ID] {
			c.add(KindLost, "task %d (key %s, group %q, due %d) acknowledged at %s, never delivered", r.ID, r.Key, r.Group, r.Due,
				r.AckedAt.Format("15:04:05.000"))
		}
	}
}

// deliveries checks each delivery on its own: known, not early, at an
// asked time.
func (c *checker) deliveries() {
	dues := map[uint64][]int64{}
	for _, u := range c.h.updates {
		dues[u.ID] = append(dues[u.ID], u.Due)
	}
	for _, d := range c.h.deliveries {
		r, ok := c.byKey[d.Key]
		if !ok || (r.Acked && r.ID != d.TaskID) {
			c.add(KindUnknown, "task %d with payload %q was never asked for", d.TaskID, d.Key)
			continue
		}
		if d.Arrived.UnixMilli() < d.FireAt {
			c.add(KindEarly, "task %d due %d arrived at %d", d.TaskID, d.FireAt, d.Arrived.UnixMilli())
		}
		if d.FireAt != r.Due && !slices.Contains(dues[d.TaskID], d.FireAt) {
			c.add(KindUnaskedFireTime, "task %d fired for %d, asked %d and updates %v", d.TaskID, d.FireAt, r.Due, dues[d.TaskID])
		}
	}
}

// cancelled checks that nothing reached a receiver after its cancel was
// acknowledged but a deposed leader's attempt (see the package comment).
func (c *checker) cancelled() {
	shardTerm := map[uint16]uint64{}
	for _, d := range c.h.deliveries {
		s := store.ShardOf(d.TaskID)
		shardTerm[s] = max(shardTerm[s], d.Term)
	}
	ackedAt := map[uint64]Cancel{}
	for _, x := range c.h.cancels {
		if x.Outcome == Acked {
			ackedAt[x.ID] = x
		}
	}
	for _, d := range c.h.deliveries {
		x, ok := ackedAt[d.TaskID]
		if ok && d.Arrived.After(x.AckedAt) && d.Term >= shardTerm[store.ShardOf(d.TaskID)] {
			c.add(KindAfterCancel, "task %d (attempt %d, term %d) arrived at %s, its cancel acknowledged at %s",
				d.TaskID, d.Attempt, d.Term, d.Arrived.Format("15:04:05.000"), x.AckedAt.Format("15:04:05.000"))
		}
	}
}

// groups checks order and single in flight on what a fence admits.
func (c *checker) groups() {
	admitted := c.admitted()
	byGroup := map[string][]Delivery{}
	for _, d := range admitted {
		if d.Group != "" {
			byGroup[d.Group] = append(byGroup[d.Group], d)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		c.groupOrder(g, byGroup[g])
		c.groupInFlight(g, byGroup[g])
	}
}

// admitted returns, in arrival order, the deliveries a receiver keeping
// the highest term per fence key admits.
func (c *checker) admitted() []Delivery {
	ds := slices.Clone(c.h.deliveries)
	slices.SortStableFunc(ds, func(a, b Delivery) int { return a.Arrived.Compare(b.Arrived) })
	highest := map[string]uint64{}
	var out []Delivery
	for _, d := range ds {
		key := "#" + strconv.FormatUint(d.TaskID, 10)
		if d.Group != "" {
			key = "/" + d.Group
		}
		if d.Term < highest[key] {
			continue
		}
		highest[key] = d.Term
		out = append(out, d)
	}
	return out
}

// groupOrder checks that a group's tasks are first delivered by rank,
// and none again after a later one started.
func (c *checker) groupOrder(g string, ds []Delivery) {
	last, lastID := -1, uint64(0)
	seen := map[uint64]bool{}
	for _, d := range ds {
		r, ok := c.byKey[d.Key]
		if !ok {
			continue // reported as unknown
		}
		if r.Rank < last || (r.Rank == last && d.TaskID != lastID) || (seen[d.TaskID] && d.TaskID != lastID) {
			c.add(KindOrder, "group %s: task %d (rank %d) delivered at %s after task %d (rank %d)", g, d.TaskID, r.Rank,
				d.Arrived.Format("15:04:05.000"), lastID, last)
			continue
		}
		seen[d.TaskID] = true
		last, lastID = r.Rank, d.TaskID
	}
}

// groupInFlight checks that no two tasks of a group were being handled
// at once.
func (c *checker) groupInFlight(g string, ds []Delivery) {
	slices.SortStableFunc(ds, func(a, b Delivery) int { return a.Arrived.Compare(b.Arrived) })
	var busy Delivery // the delivery handled until the latest time so far
	for _, d := range ds {
		if busy.TaskID != 0 && busy.TaskID != d.TaskID && d.Arrived.Before(busy.Done) {
			c.add(KindInFlight, "group %s: task %d arrived at %s while task %d was being handled until %s", g, d.TaskID,
				d.Arrived.Format("15:04:05.000000"), busy.TaskID, busy.Done.Format("15:04:05.000000"))
		}
		if d.Done.After(busy.Done) {
			busy = d
		}
	}
}

package history

import (
	"strings"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// good is a history that keeps every guarantee: group g's tasks a1 and
// a2 (shard 1), delivered in order, a1 twice (the second time by a new
// leader in term 3, before a2 started), an ungrouped task u (shard 2)
// delivered late, and an ungrouped task c (shard 2) cancelled before it
// was due, then delivered by its deposed leader in term 1 while the
// shard was in term 2.
func good() *History {
	a1, a2, u, c := store.MakeID(1, 1), store.MakeID(1, 2), store.MakeID(2, 1), store.MakeID(2, 2)
	h := &History{}
	reg := func(key, group string, rank int, due int, id uint64) {
		h.Register(Registration{Key: key, Group: group, Rank: rank, Due: at(due).UnixMilli(), Sent: at(0), Acked: true, ID: id, AckedAt: at(1)})
	}
	reg("a1", "g", 0, 100, a1)
	reg("a2", "g", 1, 110, a2)
	reg("u", "", 0, 100, u)
	reg("c", "", 0, 500, c)
	h.Register(Registration{Key: "x", Group: "g", Rank: 2, Due: at(120).UnixMilli(), Sent: at(2)}) // never answered
	h.Update(Update{ID: u, Due: at(300).UnixMilli(), Sent: at(5)})                                 // unanswered
	h.Cancel(Cancel{ID: c, Outcome: Acked, Sent: at(10), AckedAt: at(12)})
	h.Cancel(Cancel{ID: a2, Outcome: Refused, Sent: at(111), AckedAt: at(112)})
	del := func(id uint64, key, group string, fire, attempt int, term uint64, arrived, done int) {
		h.Deliver(Delivery{TaskID: id, Key: key, Group: group, FireAt: at(fire).UnixMilli(), Attempt: attempt, Term: term,
			Arrived: at(arrived), Done: at(done)})
	}
	del(a1, "a1", "g", 100, 1, 2, 100, 104)
	del(a1, "a1", "g", 100, 1, 3, 105, 106)
	del(c, "c", "", 500, 1, 1, 600, 601)
	del(a2, "a2", "g", 110, 1, 3, 110, 111)
	del(a1, "a1", "g", 100, 2, 2, 115, 116) // stale: the fence drops it
	del(u, "u", "", 300, 1, 2, 350, 351)
	return h
}

func TestCheckGoodHistory(t *testing.T) {
	if v := good().Check(); len(v) != 0 {
		t.Fatalf("violations in a good history: %v", v)
	}
}

// Each bad history is the good one with one thing broken; Check must
// report it, with its kind.
func TestCheckBadHistories(t *testing.T) {
	a1, a2 := store.MakeID(1, 1), store.MakeID(1, 2)
	for _, tc := range []struct {
		name  string
		kind  string
		spoil func(h *History)
	}{
		{"lost", KindLost, func(h *History) {
			h.Register(Registration{Key: "l", Due: at(100).UnixMilli(), Acked: true, ID: store.MakeID(3, 1), AckedAt: at(1)})
		}},
		{"id reused", KindDuplicateID, func(h *History) {
			h.Register(Registration{Key: "other", Due: at(100).UnixMilli(), Acked: true, ID: a1, AckedAt: at(1)})
		}},
		{"key acknowledged twice", KindDuplicateID, func(h *History) {
			h.Register(Registration{Key: "a1", Group: "g", Due: at(100).UnixMilli(), Acked: true, ID: store.MakeID(1, 9)})
		}},
		{"unknown", KindUnknown, func(h *History) {
			h.Deliver(Delivery{TaskID: store.MakeID(5, 5), Key: "nobody", FireAt: at(0).UnixMilli(), Term: 1, Arrived: at(1), Done: at(2)})
		}},
		{"early", KindEarly, func(h *History) {
			h.deliveries[0].Arrived = at(99)
		}},
		{"unasked fire time", KindUnaskedFireTime, func(h *History) {
			h.deliveries[5].FireAt = at(301).UnixMilli()
		}},
		{"after cancel in the newest term", KindAfterCancel, func(h *History) {
			h.deliveries[2].Term = 2
		}},
		{"order", KindOrder, func(h *History) {
			h.deliveries[3].Arrived, h.deliveries[3].Done = at(101), at(102) // a2 before a1's term 3 repeat
			h.deliveries[0].Done = at(101)
		}},
		{"earlier task again after a later one", KindOrder, func(h *History) {
			h.Deliver(Delivery{TaskID: a1, Key: "a1", Group: "g", FireAt: at(100).UnixMilli(), Attempt: 1, Term: 3, Arrived: at(200), Done: at(201)})
		}},
		{"two in flight", KindInFlight, func(h *History) {
			h.deliveries[1].Done = at(111) // a1 still handled when a2 arrives
		}},
		{"cancel refused, never delivered", KindLost, func(h *History) {
			if h.deliveries[3].TaskID != a2 {
				t.Fatal("the good history changed")
			}
			h.deliveries = append(h.deliveries[:3], h.deliveries[4:]...) // a2, whose cancel was refused
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := good()
			tc.spoil(h)
			v := h.Check()
			found := false
			for _, x := range v {
				found = found || x.Kind == tc.kind
			}
			if !found {
				t.Fatalf("want a %q violation, got %v", tc.kind, v)
			}
		})
	}
}

// A delivery after an acknowledged cancel is admitted only with a term
// below the shard's newest; with no newer term anywhere in the shard it
// is a violation even though the fence would admit it.
func TestCheckAfterCancelNeedsNewerTerm(t *testing.T) {
	h := good()
	h.deliveries = h.deliveries[:len(h.deliveries)-1] // u's delivery carried shard 2's term 2
	h.Cancel(Cancel{ID: store.MakeID(2, 1), Outcome: Acked, Sent: at(6), AckedAt: at(7)})
	v := h.Check()
	if len(v) != 1 || v[0].Kind != KindAfterCancel || !strings.Contains(v[0].Detail, "term 1") {
		t.Fatalf("want one delivered-after-cancel violation, got %v", v)
	}
}

// A task whose cancel was refused is still owed a delivery: Pending keeps
// waiting for it, as Check reports it lost if it never comes.
func TestPendingKeepsARefusedCancel(t *testing.T) {
	h := &History{}
	id := store.MakeID(1, 1)
	h.Register(Registration{Key: "k", Due: at(100).UnixMilli(), Sent: at(0), Acked: true, ID: id, AckedAt: at(1)})
	h.Cancel(Cancel{ID: id, Outcome: Refused, Sent: at(2), AckedAt: at(3)})
	if p := h.Pending(); len(p) != 1 || p[0].ID != id {
		t.Fatalf("pending %+v, want task %d", p, id)
	}
	if v := h.Check(); len(v) != 1 || v[0].Kind != KindLost {
		t.Fatalf("check %v, want the task lost", v)
	}
	h.Cancel(Cancel{ID: id, Outcome: Unknown, Sent: at(4)})
	if p := h.Pending(); len(p) != 0 {
		t.Fatalf("pending %+v after a cancel that may have taken effect, want none", p)
	}
}

func TestAbout(t *testing.T) {
	h := good()
	u, c := store.MakeID(2, 1), store.MakeID(2, 2)
	updates, cancels := h.About(u)
	if len(updates) != 1 || updates[0].Due != at(300).UnixMilli() || len(cancels) != 0 {
		t.Errorf("About(u) = %v, %v; want its one update", updates, cancels)
	}
	updates, cancels = h.About(c)
	if len(updates) != 0 || len(cancels) != 1 || cancels[0].Outcome.String() != "acknowledged" {
		t.Errorf("About(c) = %v, %v; want its acknowledged cancel", updates, cancels)
	}
}

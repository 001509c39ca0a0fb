package history

import (
	"sync"
	"time"
)

// Registration is one task the generator asked to register.
type Registration struct {
	Key   string // idempotency key, also the task's payload
	Group string // "" = ungrouped
	// Rank is the task's place in its group's (due, seq) order: the
	// generator registers a group's tasks one after another with due
	// times that only grow, so it is the order they were registered in.
	Rank    int
	Due     int64 // asked due time, Unix ms
	Sent    time.Time
	Acked   bool // the registration was acknowledged
	ID      uint64
	AckedAt time.Time
}

// Update is one attempt to move a task's due time; whether or not it
// was acknowledged, the task may fire at Due.
type Update struct {
	ID      uint64
	Due     int64 // Unix ms
	Acked   bool
	Sent    time.Time
	AckedAt time.Time
}

// Outcome is what a cancel was answered.
type Outcome int

const (
	// Unknown: no answer, or one that leaves open whether it was done.
	Unknown Outcome = iota
	// Acked: the task is cancelled.
	Acked
	// Refused: the cancel was not done (the task is being delivered or
	// is gone already).
	Refused
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acknowledged"
	case Refused:
		return "refused"
	}
	return "unknown"
}

// Cancel is one attempt to cancel a task.
type Cancel struct {
	ID      uint64
	Outcome Outcome
	Sent    time.Time
	AckedAt time.Time // when the answer came
}

// Delivery is one call a receiver got.
type Delivery struct {
	TaskID  uint64
	Key     string // the payload
	Group   string
	FireAt  int64 // Unix ms
	Attempt int
	Term    uint64
	Arrived time.Time
	Done    time.Time // when the receiver answered
}

// History is everything recorded, safe for concurrent recording.
type History struct {
	mu            sync.Mutex
	registrations []Registration
	updates       []Update
	cancels       []Cancel
	deliveries    []Delivery
}

// Register records a registration.
func (h *History) Register(r Registration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.registrations = append(h.registrations, r)
}

// Update records an update.
func (h *History) Update(u Update) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.updates = append(h.updates, u)
}

// Cancel records a cancel.
func (h *History) Cancel(c Cancel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancels = append(h.cancels, c)
}

// Deliver records a delivery.
func (h *History) Deliver(d Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deliveries = append(h.deliveries, d)
}

// Counts returns how many registrations were acknowledged and how many
// deliveries were recorded.
func (h *History) Counts() (acked, delivered int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.registrations {
		if r.Acked {
			acked++
		}
	}
	return acked, len(h.deliveries)
}

// Pending returns the acknowledged registrations that must still be
// delivered: not delivered yet and never the target of a cancel that may
// have taken effect (the tasks Check reports lost if they stay so).
func (h *History) Pending() []Registration {
	h.mu.Lock()
	defer h.mu.Unlock()
	delivered, cancelled := map[uint64]bool{}, mayBeCancelled(h.cancels)
	for _, d := range h.deliveries {
		delivered[d.TaskID] = true
	}
	var out []Registration
	for _, r := range h.registrations {
		if r.Acked && !delivered[r.ID] && !cancelled[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// Deliveries returns a copy of the deliveries recorded so far.
func (h *History) Deliveries() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Delivery(nil), h.deliveries...)
}

// About returns the updates and cancels tried on task id, in the order
// they were recorded.
func (h *History) About(id uint64) ([]Update, []Cancel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var us []Update
	var cs []Cancel
	for _, u := range h.updates {
		if u.ID == id {
			us = append(us, u)
		}
	}
	for _, x := range h.cancels {
		if x.ID == id {
			cs = append(cs, x)
		}
	}
	return us, cs
}

// mayBeCancelled returns the tasks a cancel was tried on and not refused.
func mayBeCancelled(cancels []Cancel) map[uint64]bool {
	out := map[uint64]bool{}
	for _, x := range cancels {
		if x.Outcome != Refused {
			out[x.ID] = true
		}
	}
	return out
}

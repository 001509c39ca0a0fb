package scheduler

import (
	"sync/atomic"

	"github.com/boomerangd/boomerang/dispatch"
)

// counters are kept by the loops and read by Stats.
type counters struct {
	submitted   atomic.Uint64 // fired tasks handed to the group gate, or started without it
	started     atomic.Uint64 // tasks the gate let through, or started without it
	completed   atomic.Uint64 // their releases
	ungated     atomic.Uint64 // of submitted: tasks of no gated group, started without the gate
	ungatedDone atomic.Uint64 // of completed: their releases
	attempts    atomic.Uint64 // delivery attempts started
	registered  atomic.Uint64 // tasks created
	delivered   atomic.Uint64 // attempts acknowledged
	failed      atomic.Uint64 // attempts failed
	deadLetters atomic.Int64  // entries in the dead letter queue
}

// Stats is a snapshot of the scheduler's counters.
type Stats struct {
	Registered  uint64 // tasks created since start
	Fired       uint64 // occurrences handed to the group gate
	Attempts    uint64 // delivery attempts started
	Delivered   uint64 // attempts acknowledged
	Failed      uint64 // attempts failed
	Delivering  int64  // attempts under way now
	Wheel       int64  // timers in the wheel
	Blocked     int64  // blocked groups
	DeadLetters int64  // entries in the dead letter queue
	Inbox       int64  // requests and events waiting for the loops
	Engine      dispatch.PartitionStats
}

// Stats returns the scheduler's counters. Cheap; safe at any time after
// Start.
func (s *Scheduler) Stats() Stats {
	st := Stats{
		Registered:  s.counters.registered.Load(),
		Fired:       s.counters.submitted.Load(),
		Attempts:    s.counters.attempts.Load(),
		Delivered:   s.counters.delivered.Load(),
		Failed:      s.counters.failed.Load(),
		Delivering:  s.deliveries.Load(),
		DeadLetters: s.counters.deadLetters.Load(),
	}
	for _, p := range s.parts {
		st.Wheel += p.gauges.wheel.Load()
		st.Blocked += p.gauges.blocked.Load()
		st.Inbox += p.gauges.inbox.Load()
	}
	if s.engine != nil {
		st.Engine = dispatch.Total(s.engine.Stats())
	}
	return st
}

// gauges are a partition's current sizes, published once per loop turn.
type gauges struct {
	wheel, blocked, inbox atomic.Int64
}

func (p *partition) publish(batch int) {
	p.gauges.wheel.Store(int64(p.wheel.Len()))
	p.gauges.blocked.Store(int64(len(p.blocked)))
	p.gauges.inbox.Store(int64(batch))
}

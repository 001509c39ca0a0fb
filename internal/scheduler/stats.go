package scheduler

import (
	"sync/atomic"

	"github.com/boomerangd/boomerang/dispatch"
)

// counters are kept by the loops and read by Stats.
type counters struct {
	submitted atomic.Uint64 // fired tasks handed to the group gate
	started   atomic.Uint64 // tasks the gate let through
	completed atomic.Uint64 // gate releases reported to the engine
	attempts  atomic.Uint64 // delivery attempts started
}

// Stats is a snapshot of the scheduler's counters.
type Stats struct {
	Fired      uint64 // occurrences handed to the group gate
	Attempts   uint64 // delivery attempts started
	Delivering int64  // attempts under way now
	Engine     dispatch.PartitionStats
}

// Stats returns the scheduler's counters. Cheap; safe at any time after
// Start.
func (s *Scheduler) Stats() Stats {
	st := Stats{
		Fired:      s.counters.submitted.Load(),
		Attempts:   s.counters.attempts.Load(),
		Delivering: s.deliveries.Load(),
	}
	if s.engine != nil {
		st.Engine = dispatch.Total(s.engine.Stats())
	}
	return st
}

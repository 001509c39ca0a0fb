package scheduler

import "sync/atomic"

// counters are kept by the loops and read by Stats.
type counters struct {
	attempts   atomic.Uint64 // delivery attempts started
	registered atomic.Uint64 // tasks created
	delivered  atomic.Uint64 // attempts acknowledged
	failed     atomic.Uint64 // attempts failed
	unrecorded atomic.Uint64 // outcomes the store refused to record
}

// Stats is a snapshot of the scheduler's counters.
type Stats struct {
	Registered  uint64 // tasks created since start
	Attempts    uint64 // delivery attempts started
	Delivered   uint64 // attempts acknowledged
	Failed      uint64 // attempts failed
	Unrecorded  uint64 // outcomes that could not be recorded (a bug if ever above 0)
	Delivering  int64  // attempts under way now
	Waiting     int64  // due work waiting for a delivery slot
	Wheel       int64  // timers in the wheel
	Groups      int64  // groups with due work, running, or blocked
	Blocked     int64  // blocked groups
	DeadLetters int64  // entries in the dead letter queue
	Inbox       int64  // requests and events waiting for the loops
	Stopped     bool   // a storage failure stopped the scheduler (Err says which)
}

// Stats returns the scheduler's counters. Cheap; safe at any time after
// Start.
func (s *Scheduler) Stats() Stats {
	st := Stats{
		Registered:  s.counters.registered.Load(),
		Attempts:    s.counters.attempts.Load(),
		Delivered:   s.counters.delivered.Load(),
		Failed:      s.counters.failed.Load(),
		Unrecorded:  s.counters.unrecorded.Load(),
		Delivering:  s.deliveries.Load(),
		DeadLetters: s.deadLetters.total.Load(),
		Stopped:     s.failed() != nil,
	}
	for _, p := range s.parts {
		st.Wheel += p.gauges.wheel.Load()
		st.Waiting += p.gauges.waiting.Load()
		st.Groups += p.gauges.groups.Load()
		st.Blocked += p.gauges.blocked.Load()
		st.Inbox += p.gauges.inbox.Load()
	}
	return st
}

// gauges are a partition's current sizes, published once per loop turn.
type gauges struct {
	wheel, waiting, groups, blocked, inbox atomic.Int64
}

func (p *partition) publish(batch int) {
	p.gauges.wheel.Store(int64(p.wheel.Len()))
	p.gauges.waiting.Store(int64(len(p.ready)))
	p.gauges.groups.Store(int64(len(p.runs)))
	p.gauges.blocked.Store(int64(p.blocked))
	p.gauges.inbox.Store(int64(batch))
}

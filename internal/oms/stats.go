package oms

import (
	"strings"
	"sync/atomic"
	"time"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/dispatch"
)

// numReasons is the number of Reason values; index 0 (UNSPECIFIED) counts
// ACKs.
var numReasons = len(omsv1.Reason_name)

// Stats is a snapshot of the server's counters.
type Stats struct {
	Received      uint64 // orders read, decodable or not
	Answered      uint64 // responses written to their connection
	Dropped       uint64 // responses discarded: connection gone or too slow
	Acks          uint64
	Rejects       map[omsv1.Reason]uint64 // every REJ, by reason, admission rejects included
	BrokenFrames  uint64                  // connections closed for a broken frame
	SlowConsumers uint64                  // connections closed for a full outbox
	OpenConns     int64
	Partitions    []PartitionStats
}

// PartitionStats is one partition's engine counters plus the decisions
// its pipeline made.
type PartitionStats struct {
	dispatch.PartitionStats
	Acks    uint64 // ACKs decided by this partition's workers
	Rejects uint64 // REJs decided by this partition's workers (stages 1 and 2)
}

// Received is every order routed to the partition: accepted, or refused
// BUSY or GROUP_FULL. Refused uncorrelated orders count at the partition
// tried first.
func (p PartitionStats) Received() uint64 {
	return p.Submitted + p.RejectedBusy + p.RejectedGroupFull
}

// Rejected sums Stats.Rejects.
func (s Stats) Rejected() uint64 {
	var n uint64
	for _, v := range s.Rejects {
		n += v
	}
	return n
}

// counters are the server's own counts; the engine keeps the rest. Each
// partition has its own padded block so workers of different partitions
// do not share a cache line.
type counters struct {
	received, answered, dropped, brokenFrames, slowConsumers atomic.Uint64
	connsOpen                                                atomic.Int64
	// parts[p] counts decisions of partition p; the extra last block
	// counts admission and shutdown rejects.
	parts []partCounters
}

type partCounters struct {
	reasons []atomic.Uint64
	_       [40]byte
}

func newCounters(partitions int) *counters {
	c := &counters{parts: make([]partCounters, partitions+1)}
	for i := range c.parts {
		c.parts[i].reasons = make([]atomic.Uint64, numReasons)
	}
	return c
}

// decided counts a pipeline decision of partition part.
func (c *counters) decided(part int32, r omsv1.Reason) { c.parts[part].reasons[r].Add(1) }

// refused counts a rejection made outside the pipeline.
func (c *counters) refused(r omsv1.Reason) { c.parts[len(c.parts)-1].reasons[r].Add(1) }

// Stats returns a snapshot of the counters. It is cheap and safe to call
// at any time; before Start everything is zero.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	c, eng := s.stats, s.eng
	s.mu.Unlock()
	if c == nil {
		return Stats{Rejects: map[omsv1.Reason]uint64{}}
	}
	out := Stats{
		Received:      c.received.Load(),
		Answered:      c.answered.Load(),
		Dropped:       c.dropped.Load(),
		BrokenFrames:  c.brokenFrames.Load(),
		SlowConsumers: c.slowConsumers.Load(),
		OpenConns:     c.connsOpen.Load(),
		Rejects:       make(map[omsv1.Reason]uint64),
	}
	for i, es := range eng.Stats() {
		out.Partitions = append(out.Partitions, PartitionStats{PartitionStats: es})
		p := &out.Partitions[i]
		for r := range c.parts[i].reasons {
			if r == 0 {
				p.Acks = c.parts[i].reasons[r].Load()
			} else {
				p.Rejects += c.parts[i].reasons[r].Load()
			}
		}
	}
	for i := range c.parts {
		for r := range c.parts[i].reasons {
			n := c.parts[i].reasons[r].Load()
			switch {
			case r == 0:
				out.Acks += n
			case n > 0:
				out.Rejects[omsv1.Reason(r)] += n
			}
		}
	}
	return out
}

// statsLoop logs the counters every StatsInterval until Stop.
func (s *Server) statsLoop() {
	defer s.bg.Done()
	tick := time.NewTicker(s.cfg.StatsInterval)
	defer tick.Stop()
	var last Stats
	lastAt := time.Now()
	for {
		select {
		case <-s.quit:
			return
		case now := <-tick.C:
			st := s.Stats()
			if idle(st, last) {
				continue // nothing new to say; keep the rate's window open
			}
			s.logStats(st, last, now.Sub(lastAt))
			last, lastAt = st, now
		}
	}
}

// idle reports that nothing moved between two snapshots.
func idle(st, last Stats) bool {
	if st.Received != last.Received || st.Answered != last.Answered || st.Dropped != last.Dropped ||
		len(st.Partitions) != len(last.Partitions) {
		return false
	}
	for i, p := range st.Partitions {
		if p.Dispatched != last.Partitions[i].Dispatched || p.Completed != last.Partitions[i].Completed {
			return false
		}
	}
	return true
}

// logStats writes one line per partition and one line of totals.
func (s *Server) logStats(st, last Stats, elapsed time.Duration) {
	for _, p := range st.Partitions {
		s.log.Info("partition", "p", p.Partition, "received", p.Received(),
			"busy", p.RejectedBusy, "group_full", p.RejectedGroupFull, "accepted", p.Submitted,
			"ack", p.Acks, "rej", p.Rejects, "dispatched", p.Dispatched, "completed", p.Completed,
			"queued_behind_busy", p.QueuedBehindBusy, "max_depth", p.MaxPendingDepth,
			"queued", p.Queued, "in_flight", p.InFlight)
	}
	rate := float64(st.Received-last.Received) / elapsed.Seconds()
	s.log.Info("totals", "received", st.Received, "per_s", int64(rate), "ack", st.Acks,
		"rej", st.Rejected(), "answered", st.Answered, "dropped", st.Dropped,
		"conns", st.OpenConns, "broken_frames", st.BrokenFrames, "slow_consumers", st.SlowConsumers)
}

// logFinal writes the summary that ends a Stop.
func (s *Server) logFinal() {
	st := s.Stats()
	attrs := []any{"received", st.Received, "answered", st.Answered, "dropped", st.Dropped,
		"ack", st.Acks, "rej", st.Rejected()}
	for r := range omsv1.Reason(numReasons) {
		if n := st.Rejects[r]; n > 0 {
			attrs = append(attrs, ReasonName(r), n)
		}
	}
	s.log.Info("stopped", attrs...)
}

// ReasonName is a reason as the protocol documentation spells it:
// "BUSY", "RISK_QTY_LIMIT", and "ACK" for no reason.
func ReasonName(r omsv1.Reason) string {
	if r == omsv1.Reason_REASON_UNSPECIFIED {
		return "ACK"
	}
	return strings.TrimPrefix(r.String(), "REASON_")
}

package dispatch

import (
	"runtime"
	"sync/atomic"
)

// PartitionStats is a snapshot of one partition's counters. Counters only
// grow; gauges (ActiveFamilies, BlockedFamilies, Queued, InFlight) are
// current values.
type PartitionStats struct {
	Partition         int
	Submitted         uint64 // accepted into the ring
	RejectedBusy      uint64 // TrySubmit returned ErrBusy
	RejectedGroupFull uint64 // TrySubmit returned ErrGroupFull
	Dispatched        uint64 // handed to the handler, counting reruns
	Completed         uint64 // finished with Success
	Failed            uint64 // finished with Failure, including panics
	QueuedBehindBusy  uint64 // arrived while their family had work ahead
	MaxPendingDepth   uint64 // deepest family queue seen
	Abandoned         uint64 // left unrun by Close
	ActiveFamilies    uint64 // families the partition tracks now
	BlockedFamilies   uint64 // families halted by a BlockOnError failure
	Queued            uint64 // accepted tasks not yet started
	InFlight          uint64 // started tasks not yet completed
}

// counters are written by the partition loop only. The loop keeps running
// totals in loop-owned fields and publishes them once per loop step, so the
// hot path pays no atomic instruction per task.
type counters struct {
	submitted, dispatched, completed, failed, queuedBehind, maxDepth, abandoned uint64
	queued                                                                      uint64
}

// publishedStats is what readers see. The loop's fields are guarded by a
// sequence lock: the loop makes seq odd while it stores them and even
// again after, and a reader retries until it read them all under one even
// seq, so a snapshot never mixes two steps. Producers' reject counters are
// plain atomic adds outside it.
type publishedStats struct {
	seq                                                                         atomic.Uint64
	submitted, dispatched, completed, failed, queuedBehind, maxDepth, abandoned atomic.Uint64
	active, blocked, queued, inflight                                           atomic.Uint64
	rejectedBusy, rejectedGroupFull                                             atomic.Uint64
}

func (s *publishedStats) snapshot(index int) PartitionStats {
	for {
		before := s.seq.Load()
		snap := s.read(index)
		if before%2 == 0 && s.seq.Load() == before {
			return snap
		}
		runtime.Gosched()
	}
}

func (s *publishedStats) read(index int) PartitionStats {
	return PartitionStats{
		Partition:         index,
		Submitted:         s.submitted.Load(),
		RejectedBusy:      s.rejectedBusy.Load(),
		RejectedGroupFull: s.rejectedGroupFull.Load(),
		Dispatched:        s.dispatched.Load(),
		Completed:         s.completed.Load(),
		Failed:            s.failed.Load(),
		QueuedBehindBusy:  s.queuedBehind.Load(),
		MaxPendingDepth:   s.maxDepth.Load(),
		Abandoned:         s.abandoned.Load(),
		ActiveFamilies:    s.active.Load(),
		BlockedFamilies:   s.blocked.Load(),
		Queued:            s.queued.Load(),
		InFlight:          s.inflight.Load(),
	}
}

// Total sums partition snapshots; MaxPendingDepth is the maximum.
func Total(parts []PartitionStats) PartitionStats {
	t := PartitionStats{Partition: -1}
	for _, p := range parts {
		t.Submitted += p.Submitted
		t.RejectedBusy += p.RejectedBusy
		t.RejectedGroupFull += p.RejectedGroupFull
		t.Dispatched += p.Dispatched
		t.Completed += p.Completed
		t.Failed += p.Failed
		t.QueuedBehindBusy += p.QueuedBehindBusy
		t.MaxPendingDepth = max(t.MaxPendingDepth, p.MaxPendingDepth)
		t.Abandoned += p.Abandoned
		t.ActiveFamilies += p.ActiveFamilies
		t.BlockedFamilies += p.BlockedFamilies
		t.Queued += p.Queued
		t.InFlight += p.InFlight
	}
	return t
}

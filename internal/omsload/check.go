package omsload

import (
	"github.com/HdrHistogram/hdrhistogram-go"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// numReasons is the number of Reason values.
var numReasons = len(omsv1.Reason_name)

// tally is one receiver's view of the answers. It is owned by the
// receiver goroutine and read once it has finished.
type tally struct {
	responses, acks                 uint64
	reasons                         []uint64 // REJ by reason
	fifo, duplicate, unknown, wrong uint64
	partitions                      map[int32]uint64
	lastSeq                         map[int64]uint64 // per account, in answer order
	latency, service                *hdrhistogram.Histogram
	lastAt                          int64 // when the last answer arrived
}

// Latencies are recorded in nanoseconds, from 1 ns to an hour, to three
// significant digits.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(3600e9), 3)
}

func newTally() tally {
	return tally{
		reasons:    make([]uint64, numReasons),
		partitions: make(map[int32]uint64),
		lastSeq:    make(map[int64]uint64),
		latency:    newHistogram(),
		service:    newHistogram(),
	}
}

// admission reports the reasons given before an order enters the
// pipeline. Such answers are immediate, so they may overtake earlier
// orders of the account; they carry no expectation and no latency worth
// measuring.
func admission(r omsv1.Reason) bool {
	return r == omsv1.Reason_REASON_BUSY || r == omsv1.Reason_REASON_GROUP_FULL || r == omsv1.Reason_REASON_SHUTTING_DOWN
}

// check verifies one answer and counts it. It reports whether the answer
// was the first for an order this stream sent, which frees a window slot.
func (t *tally) check(st *stream, m *omsv1.Response, now int64) bool {
	rec := st.record(m.GetClientOrderId())
	switch {
	case rec == nil || m.GetCorrelationId() != rec.account || m.GetSeqInFamily() != rec.seq:
		t.unknown++
		return false
	case rec.answered:
		t.duplicate++
		return false
	}
	rec.answered = true
	st.answered.Add(1)
	t.responses++
	t.lastAt = now
	reason := m.GetReason()
	if m.GetDecision() == omsv1.Decision_DECISION_ACK {
		t.acks++
		if reason != omsv1.Reason_REASON_UNSPECIFIED {
			t.wrong++
		}
	} else {
		t.reasons[reason]++
		if m.GetDecision() != omsv1.Decision_DECISION_REJ || reason == omsv1.Reason_REASON_UNSPECIFIED {
			t.wrong++
		}
	}
	if admission(reason) {
		return true
	}
	if rec.account > 0 {
		if m.GetSeqInFamily() <= t.lastSeq[rec.account] {
			t.fifo++
		}
		t.lastSeq[rec.account] = m.GetSeqInFamily()
	}
	if reason != expected[rec.kind] {
		t.wrong++
	}
	t.partitions[m.GetPartition()]++
	_ = t.latency.RecordValue(max(1, now-rec.intended))
	_ = t.service.RecordValue(max(1, now-rec.sentAt))
	return true
}

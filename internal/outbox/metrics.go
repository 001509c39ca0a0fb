package outbox

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the outbox's Prometheus metrics, one series per source.
type metrics struct {
	rows     *prometheus.CounterVec
	lag      *prometheus.GaugeVec
	primary  *prometheus.GaugeVec
	inFlight *prometheus.GaugeVec
}

// Row events counted by boomerang_outbox_rows_total.
const (
	eventPolled     = "polled"     // heads and free rows a poll read
	eventDispatched = "dispatched" // registered as Boomerang tasks
	eventQueued     = "queued"     // marked QUEUED
	eventDone       = "done"       // delivered: DONE or deleted
	eventError      = "error"      // ERROR: dead-lettered or poison
	eventStale      = "stale"      // taken back from a silent node to PENDING
)

func newMetrics() *metrics {
	m := &metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boomerang_outbox_rows_total",
			Help: "Outbox rows by source and event: polled, dispatched (registered as tasks), queued (marked QUEUED), done, error, stale (recovered to PENDING).",
		}, []string{"source", "event"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "boomerang_outbox_lag_seconds",
			Help: "Age of the oldest PENDING row of the source.",
		}, []string{"source"}),
		primary: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "boomerang_outbox_primary",
			Help: "1 while this node is the source's primary, else 0.",
		}, []string{"source"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "boomerang_outbox_in_flight",
			Help: "Rows this node has QUEUED whose tasks have not finished.",
		}, []string{"source"}),
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.rows, m.lag, m.primary, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("outbox: registering metrics: %w", err)
		}
	}
	return nil
}

// sourceMetrics are one source's series, created up front.
type sourceMetrics struct {
	polled, dispatched, queued, done, errored, stale prometheus.Counter

	lag, primary, inFlight prometheus.Gauge

	counts [6]atomic.Uint64 // the counters' values, for Stats
	polls  atomic.Uint64    // poll cycles, for Stats
}

func (m *metrics) source(name string) *sourceMetrics {
	ev := func(e string) prometheus.Counter { return m.rows.WithLabelValues(name, e) }
	return &sourceMetrics{
		polled: ev(eventPolled), dispatched: ev(eventDispatched), queued: ev(eventQueued),
		done: ev(eventDone), errored: ev(eventError), stale: ev(eventStale),
		lag: m.lag.WithLabelValues(name), primary: m.primary.WithLabelValues(name), inFlight: m.inFlight.WithLabelValues(name),
	}
}

// Indexes of sourceMetrics.counts.
const (
	countPolled = iota
	countDispatched
	countQueued
	countDone
	countError
	countStale
)

func (m *sourceMetrics) add(which int, n int) {
	if n <= 0 {
		return
	}
	c := [...]prometheus.Counter{m.polled, m.dispatched, m.queued, m.done, m.errored, m.stale}[which]
	c.Add(float64(n))
	m.counts[which].Add(uint64(n))
}

// Stats are a source's counters since start.
type Stats struct {
	Primary                                        bool
	Polls                                          uint64 // poll cycles as primary
	Polled, Dispatched, Queued, Done, Error, Stale uint64
	InFlight                                       int
}

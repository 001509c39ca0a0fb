package delivery

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// protocolLabels are the protocol label values, by storepb.Protocol;
// "none" is an attempt that failed before its protocol was known.
var protocolLabels = [...]string{"none", "http", "grpc", "tcp", "udp", "nats", "amqp", "activemq", "sqs"}

// metrics are the engine's Prometheus metrics. Every series is created
// up front, so the hot path only increments.
type metrics struct {
	attempts  [len(protocolLabels)][]prometheus.Counter // by protocol, then outcome index
	latency   [len(protocolLabels)]prometheus.Observer
	retries   prometheus.Counter
	permanent prometheus.Counter
	exhausted prometheus.Counter
	dialFails prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, pools map[string]*pool) (*metrics, error) {
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "boomerang_delivery_attempts_total",
		Help: "Delivery attempts by protocol and outcome (ok, rejected, timeout, unreachable, overloaded, invalid, closed).",
	}, []string{"protocol", "outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "boomerang_delivery_latency_seconds",
		Help:    "Time from an attempt taking its pool slot to its outcome.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100 µs to about 15 min
	}, []string{"protocol"})
	final := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "boomerang_delivery_final_failures_total",
		Help: "Failed attempts after which the occurrence was dead-lettered: permanent (retrying cannot help) or exhausted (no attempts left).",
	}, []string{"reason"})
	m := &metrics{
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boomerang_delivery_retries_total",
			Help: "Failed attempts that were scheduled to be retried.",
		}),
		permanent: final.WithLabelValues("permanent"),
		exhausted: final.WithLabelValues("exhausted"),
		dialFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boomerang_delivery_dial_failures_total",
			Help: "Failed connection attempts to raw TCP endpoints.",
		}),
	}
	for p, pl := range protocolLabels {
		for _, o := range outcomes {
			m.attempts[p] = append(m.attempts[p], attempts.WithLabelValues(pl, o))
		}
		m.latency[p] = latency.WithLabelValues(pl)
	}
	if reg == nil {
		return m, nil
	}
	collectors := []prometheus.Collector{attempts, latency, final, m.retries, m.dialFails}
	for name, p := range pools {
		collectors = append(collectors, poolCollectors(name, p)...)
	}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("delivery: registering metrics: %w", err)
		}
	}
	return m, nil
}

func poolCollectors(name string, p *pool) []prometheus.Collector {
	labels := prometheus.Labels{"pool": name}
	gauge := func(metric, help string, f func(PoolStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metric, Help: help, ConstLabels: labels},
			func() float64 { return f(p.stats()) })
	}
	return []prometheus.Collector{
		gauge("boomerang_delivery_pool_limit", "The pool's MaxConcurrent.",
			func(s PoolStats) float64 { return float64(s.Limit) }),
		gauge("boomerang_delivery_pool_in_use", "Attempts under way in the pool.",
			func(s PoolStats) float64 { return float64(s.InUse) }),
		gauge("boomerang_delivery_pool_queued", "Attempts waiting for a slot of the pool.",
			func(s PoolStats) float64 { return float64(s.Queued) }),
		gauge("boomerang_delivery_pool_saturation", "Attempts under way over the pool's limit (1 = full).",
			func(s PoolStats) float64 { return float64(s.InUse) / float64(s.Limit) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "boomerang_delivery_pool_rejected_total", ConstLabels: labels,
			Help: "Attempts refused because the pool's queue was full.",
		}, func() float64 { return float64(p.rejected.Load()) }),
	}
}

// record counts an ended attempt.
func (m *metrics) record(a *attempt, err error) {
	p := a.route.protocol
	if int(p) >= len(protocolLabels) {
		p = storepb.Protocol_PROTOCOL_UNSPECIFIED
	}
	m.attempts[p][outcomeOf(err)].Inc()
	if a.slot {
		m.latency[p].Observe(a.e.cfg.Clock.Since(a.begun).Seconds())
	}
}

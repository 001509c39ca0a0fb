package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

// metrics are the server's own Prometheus metrics. The scheduler's, the
// store's and the sessions' are read at scrape time by stateCollector.
type metrics struct {
	requests     *prometheus.CounterVec   // by operation and status
	latency      *prometheus.HistogramVec // by operation
	connections  prometheus.Gauge
	brokenFrames prometheus.Counter
	batchTasks   *prometheus.CounterVec // RegisterTasks results, by status
	forwarded    *prometheus.CounterVec // requests sent on to a shard's leader, by operation
}

// latencyBuckets span 100 µs to about 13 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 18)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boomerang_requests_total",
			Help: "API requests answered, by operation and status, on both transports.",
		}, []string{"operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "boomerang_request_duration_seconds",
			Help:    "Time from receiving a request to sending its response (ack latency), by operation.",
			Buckets: latencyBuckets,
		}, []string{"operation"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "boomerang_tcp_connections",
			Help: "Open raw TCP connections.",
		}),
		brokenFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boomerang_tcp_broken_frames_total",
			Help: "Raw TCP connections closed because of a broken frame.",
		}),
		batchTasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boomerang_batch_tasks_total",
			Help: "Tasks answered in RegisterTasks requests, by each task's own status (the request counts once in boomerang_requests_total).",
		}, []string{"status"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boomerang_forwarded_requests_total",
			Help: "Requests this node sent on to another node (requests for a shard it leads, RegisterTasks sub-batches, per-node parts of listings), by operation.",
		}, []string{"operation"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.connections, m.brokenFrames, m.batchTasks, m.forwarded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts an answered request.
func (m *metrics) observe(op string, status boomerangv1.Status, elapsed time.Duration) {
	if op == "" {
		op = "unknown"
	}
	m.requests.WithLabelValues(op, statusLabel(status)).Inc()
	m.latency.WithLabelValues(op).Observe(elapsed.Seconds())
}

// observeBatch counts the results of a RegisterTasks response, if r is
// one.
func (m *metrics) observeBatch(r *boomerangv1.RegisterTasksResponse) {
	if r == nil {
		return
	}
	ok := 0
	for _, res := range r.Results {
		if e := res.GetError(); e != nil {
			m.batchTasks.WithLabelValues(statusLabel(e.Status)).Inc()
			continue
		}
		ok++
	}
	m.batchTasks.WithLabelValues(statusLabel(boomerangv1.Status_STATUS_OK)).Add(float64(ok))
}

// stateCollector reads the scheduler's, the store's and the sessions'
// counters once per scrape.
type stateCollector struct {
	sched *scheduler.Scheduler
	st    *store.Store
	auth  *auth.Auth
}

type metricSpec struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(scheduler.Stats, store.Stats) float64
}

func spec(name, help string, kind prometheus.ValueType, value func(scheduler.Stats, store.Stats) float64) metricSpec {
	return metricSpec{desc: prometheus.NewDesc(name, help, nil, nil), kind: kind, value: value}
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

var stateMetrics = []metricSpec{
	spec("boomerang_tasks_registered_total", "Tasks created since start.", counter,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Registered) }),
	spec("boomerang_deliveries_started_total", "Delivery attempts started (all protocols; see boomerang_delivery_attempts_total for outcomes by protocol).", counter,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Attempts) }),
	spec("boomerang_deliveries_succeeded_total", "Delivery attempts acknowledged by the receiver.", counter,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Delivered) }),
	spec("boomerang_deliveries_failed_total", "Delivery attempts that failed.", counter,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Failed) }),
	spec("boomerang_deliveries_in_flight", "Delivery attempts under way.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Delivering) }),
	spec("boomerang_dead_letters", "Entries in the dead letter queue.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.DeadLetters) }),
	spec("boomerang_wheel_timers", "Timers in the timing wheel (tasks due within the horizon, and retries).", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Wheel) }),
	spec("boomerang_blocked_groups", "Groups halted by a BLOCK_ON_ERROR dead letter.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Blocked) }),
	spec("boomerang_inbox_depth", "Requests and events waiting for the scheduler's partition loops.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Inbox) }),
	spec("boomerang_deliveries_waiting", "Due tasks and groups waiting for a delivery slot.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Waiting) }),
	spec("boomerang_active_groups", "Groups with due work, running a task, or blocked.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Groups) }),
	spec("boomerang_outcomes_unrecorded_total", "Delivery outcomes the store refused to record; the attempt is repeated. Above 0 is a bug.", counter,
		func(s scheduler.Stats, _ store.Stats) float64 { return float64(s.Unrecorded) }),
	spec("boomerang_scheduler_failed", "1 once a storage failure has stopped the scheduler; see /readyz for the reason.", gauge,
		func(s scheduler.Stats, _ store.Stats) float64 {
			if s.Stopped {
				return 1
			}
			return 0
		}),
	spec("boomerang_store_commits_total", "Store commits, synced or not.", counter,
		func(_ scheduler.Stats, s store.Stats) float64 { return float64(s.Commits) }),
	spec("boomerang_store_synced_commits_total", "Store commits that waited for an fsync.", counter,
		func(_ scheduler.Stats, s store.Stats) float64 { return float64(s.SyncedCommits) }),
	spec("boomerang_store_wal_syncs_total", "Write-ahead log fsyncs; synced commits per sync is the group commit factor.", counter,
		func(_ scheduler.Stats, s store.Stats) float64 { return float64(s.WALSyncs) }),
	spec("boomerang_store_flushed_bytes_total", "Bytes of sstables the store's memtable flushes wrote.", counter,
		func(_ scheduler.Stats, s store.Stats) float64 { return float64(s.FlushedBytes) }),
	spec("boomerang_store_compacted_bytes_total", "Bytes of sstables the store's compactions wrote; against the flushed bytes, how often a byte is rewritten.", counter,
		func(_ scheduler.Stats, s store.Stats) float64 { return float64(s.CompactedBytes) }),
	spec("boomerang_store_disk_bytes", "Bytes of the store's files on disk.", gauge,
		func(_ scheduler.Stats, s store.Stats) float64 { return float64(s.DiskBytes) }),
}

var sessionsDesc = prometheus.NewDesc("boomerang_sessions", "Sessions remembered: live ones and recently expired ones.", nil, nil)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range stateMetrics {
		ch <- m.desc
	}
	ch <- sessionsDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ss, sts := c.sched.Stats(), c.st.Stats()
	for _, m := range stateMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(ss, sts))
	}
	ch <- prometheus.MustNewConstMetric(sessionsDesc, gauge, float64(c.auth.Sessions()))
}

// registerRuntime adds the Go runtime and process collectors.
func registerRuntime(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

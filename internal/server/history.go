package server

import (
	"errors"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// history remembers, in memory and bounded, what the panel shows of the
// recent past: each task's delivery attempts until its occurrence
// finishes, then the finished occurrence with its attempts for
// Config.Panel.CompletedWindow; and the delivery counters and latency
// histograms the sampler reads. It starts empty at every start.
type history struct {
	clock       clockwork.Clock
	window      time.Duration
	maxDone     int
	maxLive     int
	maxAttempts int
	protocolOf  func(*storepb.Task) storepb.Protocol

	mu   sync.Mutex
	live map[uint64]*liveTask // tasks with attempts whose occurrence goes on
	done []finished           // ring, oldest at head
	head int
	seq  uint64 // finished records so far

	byProtocol   [numProtocols]protocolCount
	deadLettered uint64
	lag, took    *hdrhistogram.Histogram // since the last sample, in µs
}

type protocolCount struct{ delivered, failed uint64 }

// numProtocols sizes the per-protocol counters; an unknown protocol counts
// as PROTOCOL_UNSPECIFIED.
const numProtocols = int(storepb.Protocol_PROTOCOL_SQS) + 1

// liveTask is one task's attempts at its current occurrence.
type liveTask struct {
	client   string
	attempts []*attemptRecord
	last     time.Time // latest attempt's start
}

// attemptRecord is one delivery attempt; outcome fields are set when it ends.
type attemptRecord struct {
	number   uint32
	fireAtMs int64
	started  time.Time
	duration time.Duration
	protocol storepb.Protocol
	ended    bool
	err      string
}

// finished is an occurrence that reached its final outcome.
type finished struct {
	seq        uint64
	task       *storepb.Task // without its payload
	delivered  bool
	deadLetter uint64
	err        string
	at         time.Time
	attempts   []attemptRecord
}

// Bounds of the latency histograms: 1 µs to 1 hour, 2 significant digits.
const (
	histMinMicros = 1
	histMaxMicros = int64(time.Hour / time.Microsecond)
)

func newHistory(cfg *Config, protocolOf func(*storepb.Task) storepb.Protocol) *history {
	return &history{
		clock: cfg.Clock, window: cfg.Panel.CompletedWindow, maxDone: cfg.Panel.CompletedMax,
		maxLive: cfg.Panel.CompletedMax, maxAttempts: maxAttemptsKept, protocolOf: protocolOf,
		live: map[uint64]*liveTask{},
		lag:  hdrhistogram.New(histMinMicros, histMaxMicros, 2),
		took: hdrhistogram.New(histMinMicros, histMaxMicros, 2),
	}
}

// maxAttemptsKept bounds the attempts remembered per occurrence; the
// latest are kept.
const maxAttemptsKept = 32

// wrap records every attempt that next makes.
func (h *history) wrap(next scheduler.Deliverer) scheduler.Deliverer {
	return scheduler.DelivererFunc(func(d scheduler.Delivery, done func(error)) {
		a := h.begin(d)
		next.Deliver(d, func(err error) {
			h.end(d.Task.Id, a, err)
			done(err)
		})
	})
}

func (h *history) begin(d scheduler.Delivery) *attemptRecord {
	now := h.clock.Now()
	a := &attemptRecord{number: uint32(d.Attempt), fireAtMs: d.Task.DueMs, started: now, protocol: h.protocolOf(d.Task)}
	if int(a.protocol) >= numProtocols {
		a.protocol = storepb.Protocol_PROTOCOL_UNSPECIFIED
	}
	lag := now.Sub(time.UnixMilli(d.Task.DueMs))
	h.mu.Lock()
	defer h.mu.Unlock()
	if d.Attempt == 1 {
		_ = h.lag.RecordValue(clampMicros(lag))
	}
	lt := h.live[d.Task.Id]
	if lt == nil {
		if len(h.live) >= h.maxLive {
			return a // full: this task's attempts go unrecorded
		}
		lt = &liveTask{client: d.Task.Client}
		h.live[d.Task.Id] = lt
	}
	if len(lt.attempts) == h.maxAttempts {
		lt.attempts = append(lt.attempts[:0], lt.attempts[1:]...)
	}
	lt.attempts = append(lt.attempts, a)
	lt.last = now
	return a
}

func (h *history) end(id uint64, a *attemptRecord, err error) {
	took := h.clock.Since(a.started)
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Is(err, scheduler.ErrNotAttempted) {
		h.forget(id, a) // refused locally: tried again, not an attempt
		return
	}
	a.ended, a.duration = true, took
	if err != nil {
		a.err = err.Error()
		h.byProtocol[a.protocol].failed++
	} else {
		h.byProtocol[a.protocol].delivered++
	}
	_ = h.took.RecordValue(clampMicros(took))
}

func (h *history) forget(id uint64, a *attemptRecord) {
	if lt := h.live[id]; lt != nil {
		for i, x := range lt.attempts {
			if x == a {
				lt.attempts = append(lt.attempts[:i], lt.attempts[i+1:]...)
				break
			}
		}
	}
}

// finish records an occurrence's final outcome (scheduler.Config.OnFinished:
// on a partition loop, so it only moves memory).
func (h *history) finish(f scheduler.Finished) {
	now := h.clock.Now()
	t := f.Task
	rec := finished{
		task: &storepb.Task{
			Id: t.Id, Client: t.Client, Group: t.Group, DueMs: t.DueMs, IntervalMs: t.IntervalMs, Seq: t.Seq,
			Mode: t.Mode, Attempts: t.Attempts, Fires: t.Fires, LastError: t.LastError,
			IdempotencyKey: t.IdempotencyKey, CreatedMs: t.CreatedMs, UpdatedMs: t.UpdatedMs,
		},
		delivered: f.Delivered, deadLetter: f.DeadLetter, err: f.Error, at: now,
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !f.Delivered {
		h.deadLettered++
	}
	if lt := h.live[t.Id]; lt != nil {
		for _, a := range lt.attempts {
			rec.attempts = append(rec.attempts, *a)
		}
		delete(h.live, t.Id)
	}
	h.seq++
	rec.seq = h.seq
	if len(h.done) < h.maxDone {
		h.done = append(h.done, rec)
		return
	}
	h.done[h.head] = rec
	h.head = (h.head + 1) % len(h.done)
}

// expire forgets finished occurrences older than the window, and the
// attempts of tasks that made none within it (cancelled after a failed
// attempt, or retrying less often than the window).
func (h *history) expire() {
	cutoff := h.clock.Now().Add(-h.window)
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, lt := range h.live {
		if lt.last.Before(cutoff) {
			delete(h.live, id)
		}
	}
	ordered := h.ordered()
	keep := 0
	for keep < len(ordered) && ordered[keep].at.Before(cutoff) {
		keep++
	}
	if keep > 0 {
		h.done = append([]finished(nil), ordered[keep:]...)
		h.head = 0
	}
}

// ordered returns the finished ring oldest first. The caller holds mu.
func (h *history) ordered() []finished {
	if h.head == 0 {
		return h.done
	}
	return append(append([]finished(nil), h.done[h.head:]...), h.done[:h.head]...)
}

// attempts returns a task's owner and its remembered attempts: those of
// its finished occurrences, then its current one's, oldest first.
func (h *history) attempts(id uint64) (client string, out []attemptRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.ordered() {
		if f.task.Id == id {
			client = f.task.Client
			out = append(out, f.attempts...)
		}
	}
	if lt := h.live[id]; lt != nil {
		client = lt.client
		for _, a := range lt.attempts {
			out = append(out, *a)
		}
	}
	return client, out
}

// completed returns finished occurrences newest first, from below seq
// before (0: the newest), that keep accepts, at most limit, and the next
// page's token (0 when there is none).
func (h *history) completed(before uint64, limit int, keep func(*finished) bool) ([]finished, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ordered := h.ordered()
	var out []finished
	for i := len(ordered) - 1; i >= 0; i-- {
		f := &ordered[i]
		if (before != 0 && f.seq >= before) || !keep(f) {
			continue
		}
		if len(out) == limit {
			return out, out[len(out)-1].seq
		}
		out = append(out, *f)
	}
	return out, 0
}

// deliveryCounts is what the sampler takes from the history each turn.
type deliveryCounts struct {
	byProtocol   [numProtocols]protocolCount
	deadLettered uint64
	lag, took    percentiles
}

// sample reads the counters and the latency percentiles since the last
// sample, and starts new histograms.
func (h *history) sample() deliveryCounts {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := deliveryCounts{byProtocol: h.byProtocol, deadLettered: h.deadLettered,
		lag: percentilesOf(h.lag), took: percentilesOf(h.took)}
	h.lag.Reset()
	h.took.Reset()
	return c
}

type percentiles struct {
	count              uint64
	p50, p90, p99, max float64 // milliseconds
}

func percentilesOf(hist *hdrhistogram.Histogram) percentiles {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return percentiles{
		count: uint64(hist.TotalCount()),
		p50:   ms(hist.ValueAtQuantile(50)), p90: ms(hist.ValueAtQuantile(90)),
		p99: ms(hist.ValueAtQuantile(99)), max: ms(hist.Max()),
	}
}

func clampMicros(d time.Duration) int64 {
	return min(max(d.Microseconds(), histMinMicros), histMaxMicros)
}

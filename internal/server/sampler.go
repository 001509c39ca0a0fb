package server

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/scheduler"
)

// sampler takes the scheduler's and the history's counters every
// Config.Panel.StatsInterval into a ring that covers Config.Panel.StatsRetention, so
// the panel can draw the last minutes and hours without Prometheus. It
// also expires the history's old entries.
type sampler struct {
	clock    clockwork.Clock
	interval time.Duration
	stats    func() scheduler.Stats
	hist     *history

	mu   sync.Mutex
	ring []sample
	head int // oldest, once the ring is full
	size int

	stop chan struct{}
	done chan struct{}
}

// sample is the counters at one moment.
type sample struct {
	at     time.Time
	sched  scheduler.Stats
	counts deliveryCounts
}

func newSampler(cfg *Config, stats func() scheduler.Stats, hist *history) *sampler {
	n := max(1, int(cfg.Panel.StatsRetention/cfg.Panel.StatsInterval))
	return &sampler{clock: cfg.Clock, interval: cfg.Panel.StatsInterval, stats: stats, hist: hist, ring: make([]sample, n)}
}

// start takes a first sample and then one per interval until stopped.
func (s *sampler) start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.take()
	ticker := s.clock.NewTicker(s.interval)
	go func() {
		defer close(s.done)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.Chan():
				s.take()
				s.hist.expire()
			case <-s.stop:
				return
			}
		}
	}()
}

// shutdown stops the sampling goroutine; safe if start was not called.
func (s *sampler) shutdown() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
}

func (s *sampler) take() {
	x := sample{at: s.clock.Now(), sched: s.stats(), counts: s.hist.sample()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size < len(s.ring) {
		s.ring[s.size] = x
		s.size++
		return
	}
	s.ring[s.head] = x
	s.head = (s.head + 1) % len(s.ring)
}

// since returns the samples taken after t, oldest first, at most
// maxPoints: with more, evenly spaced ones, always ending with the latest.
func (s *sampler) since(t time.Time, maxPoints int) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for i := range s.size {
		x := s.ring[(s.head+i)%len(s.ring)]
		if x.at.After(t) {
			out = append(out, x)
		}
	}
	if len(out) <= maxPoints {
		return out
	}
	stride := (len(out) + maxPoints - 1) / maxPoints
	thinned := make([]sample, 0, maxPoints)
	for i := (len(out) - 1) % stride; i < len(out); i += stride {
		thinned = append(thinned, out[i])
	}
	return thinned
}

package delivery

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// pool is one dispatch pool: at most MaxConcurrent attempts under way, at
// most MaxPerSecond started per second, at most MaxQueued waiting.
//
// Waiting attempts are kept per endpoint (a lane) and lanes take turns, so
// a burst to one endpoint does not queue ahead of everything else. A lane
// may start an attempt only while it has fewer than its share under way:
// MaxConcurrent divided by the lanes with work, rounded up. A slow
// endpoint therefore holds at most its share of the pool's slots once
// others are waiting, and the others keep their share; an endpoint alone
// may use the whole pool.
type pool struct {
	name  string
	cfg   PoolConfig
	clock clockwork.Clock
	burst float64

	mu      sync.Mutex
	inUse   int
	queued  int
	lanes   map[string]*lane
	ready   queue[*lane] // lanes with waiting attempts that may start one
	tokens  float64
	refill  time.Time
	wake    clockwork.Timer // pending while rate-limited with work waiting
	closed  bool
	drained chan struct{} // closed once closed and nothing is in use

	rejected atomic.Uint64 // attempts refused with ErrPoolFull
}

// lane holds one endpoint's attempts in a pool.
type lane struct {
	key     string
	waiting queue[*attempt]
	inUse   int
	ready   bool // in pool.ready
}

func newPool(name string, cfg PoolConfig, clock clockwork.Clock) *pool {
	p := &pool{name: name, cfg: cfg, clock: clock, lanes: map[string]*lane{}, drained: make(chan struct{})}
	if cfg.MaxPerSecond > 0 {
		p.burst = max(1, cfg.MaxPerSecond/10)
		p.tokens, p.refill = p.burst, clock.Now()
	}
	return p
}

// share is how many attempts a lane may have under way.
func (p *pool) share() int {
	n := max(1, len(p.lanes))
	return max(1, (p.cfg.MaxConcurrent+n-1)/n)
}

// submit starts a or queues it. It returns ErrClosed or ErrPoolFull
// without taking a.
func (p *pool) submit(a *attempt) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	l := p.lanes[a.route.key]
	if l == nil {
		l = &lane{key: a.route.key}
		p.lanes[l.key] = l
	}
	if l.waiting.len() == 0 && p.inUse < p.cfg.MaxConcurrent && l.inUse < p.share() && p.takeToken() {
		p.inUse++
		l.inUse++
		p.mu.Unlock()
		a.lane = l
		a.start()
		return nil
	}
	if p.queued >= p.cfg.MaxQueued {
		if l.inUse == 0 && l.waiting.len() == 0 {
			delete(p.lanes, l.key)
		}
		p.mu.Unlock()
		p.rejected.Add(1)
		return ErrPoolFull
	}
	a.lane = l
	l.waiting.push(a)
	p.queued++
	if !l.ready && l.inUse < p.share() {
		l.ready = true
		p.ready.push(l)
	}
	// Nothing under way may end to start it: a rate limit needs its timer.
	start := p.pump(nil)
	p.mu.Unlock()
	for _, a := range start {
		a.start()
	}
	return nil
}

// release returns a's slot and starts whatever may start now.
func (p *pool) release(a *attempt) {
	p.mu.Lock()
	l := a.lane
	p.inUse--
	l.inUse--
	if l.inUse == 0 && l.waiting.len() == 0 {
		before := p.share()
		delete(p.lanes, l.key)
		if p.share() > before {
			p.readyAll()
		}
	} else if l.waiting.len() > 0 && !l.ready && l.inUse < p.share() {
		l.ready = true
		p.ready.push(l)
	}
	start := p.pump(nil)
	if p.closed && p.inUse == 0 {
		close(p.drained)
	}
	p.mu.Unlock()
	for _, a := range start {
		a.start()
	}
}

// readyAll puts back every lane that waits and is within its share, after
// the share grew.
func (p *pool) readyAll() {
	share := p.share()
	for _, l := range p.lanes {
		if !l.ready && l.waiting.len() > 0 && l.inUse < share {
			l.ready = true
			p.ready.push(l)
		}
	}
}

// pump takes the attempts that may start now, lanes taking turns, and
// counts their slots. The caller starts them after unlocking.
func (p *pool) pump(start []*attempt) []*attempt {
	for p.inUse < p.cfg.MaxConcurrent && p.ready.len() > 0 && !p.closed {
		l := p.ready.pop()
		l.ready = false
		if l.waiting.len() == 0 || l.inUse >= p.share() {
			continue // over its share: back in turn when one of its attempts ends
		}
		if !p.takeToken() {
			l.ready = true
			p.ready.pushFront(l)
			p.armWake()
			break
		}
		a := l.waiting.pop()
		p.queued--
		p.inUse++
		l.inUse++
		start = append(start, a)
		if l.waiting.len() > 0 && l.inUse < p.share() {
			l.ready = true
			p.ready.push(l)
		}
	}
	return start
}

// takeToken spends one token of the rate limit, if there is one.
func (p *pool) takeToken() bool {
	if p.cfg.MaxPerSecond <= 0 {
		return true
	}
	now := p.clock.Now()
	if elapsed := now.Sub(p.refill); elapsed > 0 {
		p.tokens = min(p.burst, p.tokens+elapsed.Seconds()*p.cfg.MaxPerSecond)
		p.refill = now
	}
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

// armWake sets a timer for when the next token is available.
func (p *pool) armWake() {
	if p.wake != nil {
		return
	}
	wait := time.Duration((1 - p.tokens) / p.cfg.MaxPerSecond * float64(time.Second))
	p.wake = p.clock.AfterFunc(max(wait, time.Microsecond), func() {
		p.mu.Lock()
		p.wake = nil
		start := p.pump(nil)
		p.mu.Unlock()
		for _, a := range start {
			a.start()
		}
	})
}

// close refuses new attempts and returns the waiting ones, which the
// caller fails. drained is closed once the attempts under way are done.
func (p *pool) close() []*attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.wake != nil {
		p.wake.Stop()
		p.wake = nil
	}
	var waiting []*attempt
	for key, l := range p.lanes {
		waiting = append(waiting, l.waiting.drain()...)
		l.ready = false
		if l.inUse == 0 {
			delete(p.lanes, key)
		}
	}
	p.ready = queue[*lane]{}
	p.queued = 0
	if p.inUse == 0 {
		close(p.drained)
	}
	return waiting
}

// PoolStats is a pool's state.
type PoolStats struct {
	Limit    int    // MaxConcurrent
	InUse    int    // attempts under way
	Queued   int    // attempts waiting for a slot
	Lanes    int    // endpoints with attempts under way or waiting
	Rejected uint64 // attempts refused because the queue was full
}

func (p *pool) stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Limit: p.cfg.MaxConcurrent, InUse: p.inUse, Queued: p.queued, Lanes: len(p.lanes), Rejected: p.rejected.Load()}
}

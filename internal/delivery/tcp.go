package delivery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boomerangd/boomerang/internal/egress"
)

// tcpTransport sends Delivery frames over pooled, pipelined connections,
// Config.TCPConns per endpoint, and matches the Ack frames that come back,
// in any order, by delivery id.
//
// Connections are dialled on demand. When a dial fails, the endpoint is
// down for a backoff (Config.RedialMin doubling up to RedialMax, with
// jitter) during which its attempts fail at once with ErrUnreachable; the
// first attempt after it dials again. A connection that breaks fails the
// attempts awaiting its Acks; the next attempt dials a new one.
type tcpTransport struct {
	e      *Engine
	dialer *egress.Dialer

	// Lock order: mu, then an endpoint's mu, then life.
	mu        sync.Mutex
	endpoints map[string]*tcpEndpoint

	life    sync.Mutex
	closed  atomic.Bool    // set under life
	workers sync.WaitGroup // dials and connection loops; added to under life while not closed
}

// tcpEndpoint is one endpoint's connections and dialling state.
type tcpEndpoint struct {
	t    *tcpTransport
	addr string

	mu        sync.Mutex
	conns     []*tcpConn
	next      int // round-robin cursor over conns
	dialing   int
	waiting   []*attempt // for the first connection
	failures  int        // dials failed in a row
	downUntil time.Time
	lastErr   error
	lastUsed  time.Time
	removed   bool // swept from the transport: look the endpoint up again
}

func newTCPTransport(e *Engine) *tcpTransport {
	return &tcpTransport{e: e, dialer: e.dialer(), endpoints: map[string]*tcpEndpoint{}}
}

func (t *tcpTransport) contextual() bool { return false }

func (t *tcpTransport) send(a *attempt) {
	for {
		if t.closed.Load() {
			go a.finish(ErrClosed)
			return
		}
		t.mu.Lock()
		ep := t.endpoints[a.route.endpoint]
		if ep == nil {
			ep = &tcpEndpoint{t: t, addr: a.route.endpoint}
			t.endpoints[ep.addr] = ep
		}
		t.mu.Unlock()
		if ep.send(a) {
			return
		}
	}
}

// send queues a on a connection, or for the first one; it reports false
// when the endpoint has been swept away.
func (ep *tcpEndpoint) send(a *attempt) bool {
	ep.mu.Lock()
	if ep.removed {
		ep.mu.Unlock()
		return false
	}
	ep.lastUsed = a.begun
	if n := len(ep.conns); n > 0 {
		c := ep.conns[ep.next%n]
		ep.next++
		if n < ep.t.e.cfg.TCPConns && ep.dialing == 0 && !a.begun.Before(ep.downUntil) {
			ep.dial() // grow towards TCPConns while dials succeed
		}
		ep.mu.Unlock()
		c.enqueue(a)
		return true
	}
	if a.begun.Before(ep.downUntil) {
		err := fmt.Errorf("%w: %s: redialling in %v after: %w", ErrUnreachable, ep.addr,
			ep.downUntil.Sub(a.begun).Round(time.Millisecond), ep.lastErr)
		ep.mu.Unlock()
		go a.finish(err)
		return true
	}
	if ep.dialing == 0 && !ep.dial() {
		ep.mu.Unlock()
		go a.finish(ErrClosed)
		return true
	}
	ep.waiting = append(ep.waiting, a)
	ep.mu.Unlock()
	return true
}

// dial starts a connection attempt, unless the transport is closed; ep.mu
// is held.
func (ep *tcpEndpoint) dial() bool {
	t := ep.t
	t.life.Lock()
	if t.closed.Load() {
		t.life.Unlock()
		return false
	}
	t.workers.Add(1)
	t.life.Unlock()
	ep.dialing++
	go func() {
		defer t.workers.Done()
		ctx, cancel := context.WithTimeout(ep.t.e.ctx, ep.t.e.cfg.DefaultTimeout)
		nc, err := ep.t.dialer.DialContext(ctx, "tcp", ep.addr)
		cancel()
		if err != nil {
			ep.dialFailed(err)
			return
		}
		ep.connected(newTCPConn(ep, nc))
	}()
	return true
}

func (ep *tcpEndpoint) connected(c *tcpConn) {
	ep.mu.Lock()
	// Checked under ep.mu, so close either sees this connection in
	// ep.conns or this sees closed.
	ep.t.life.Lock()
	closed := ep.t.closed.Load()
	if !closed {
		ep.t.workers.Add(2) // c's reader and writer
	}
	ep.t.life.Unlock()
	ep.dialing--
	waiting := ep.waiting
	ep.waiting = nil
	if closed {
		ep.mu.Unlock()
		c.fail(ErrClosed)
		for _, a := range waiting {
			a.finish(ErrClosed)
		}
		return
	}
	ep.conns = append(ep.conns, c)
	ep.failures = 0
	ep.mu.Unlock()
	c.run()
	for _, a := range waiting {
		c.enqueue(a)
	}
}

func (ep *tcpEndpoint) dialFailed(err error) {
	ep.t.e.metrics.dialFails.Inc()
	cfg := &ep.t.e.cfg
	ep.mu.Lock()
	ep.dialing--
	ep.failures++
	backoff := cfg.RedialMin << min(ep.failures-1, 30)
	if backoff > cfg.RedialMax || backoff <= 0 {
		backoff = cfg.RedialMax
	}
	backoff -= time.Duration(float64(backoff) * 0.2 * rand.Float64())
	ep.downUntil = cfg.Clock.Now().Add(backoff)
	ep.lastErr = err
	waiting := ep.waiting
	ep.waiting = nil
	ep.mu.Unlock()
	for _, a := range waiting {
		a.finish(dialError(err))
	}
}

// drop forgets a broken connection.
func (ep *tcpEndpoint) drop(c *tcpConn) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for i, x := range ep.conns {
		if x == c {
			ep.conns = append(ep.conns[:i], ep.conns[i+1:]...)
			return
		}
	}
}

// sweep closes connections with nothing awaiting an Ack that have been
// unused since before cutoff, and forgets endpoints left with nothing.
func (t *tcpTransport) sweep(cutoff time.Time) {
	t.mu.Lock()
	eps := make([]*tcpEndpoint, 0, len(t.endpoints))
	for _, ep := range t.endpoints {
		eps = append(eps, ep)
	}
	t.mu.Unlock()
	for _, ep := range eps {
		ep.mu.Lock()
		var idle []*tcpConn
		if ep.lastUsed.Before(cutoff) {
			idle = append(idle, ep.conns...)
		}
		ep.mu.Unlock()
		for _, c := range idle {
			c.closeIdle()
		}
		t.mu.Lock()
		ep.mu.Lock()
		if len(ep.conns) == 0 && ep.dialing == 0 && len(ep.waiting) == 0 && ep.lastUsed.Before(cutoff) {
			ep.removed = true
			if t.endpoints[ep.addr] == ep {
				delete(t.endpoints, ep.addr)
			}
		}
		ep.mu.Unlock()
		t.mu.Unlock()
	}
}

func (t *tcpTransport) close() {
	t.life.Lock()
	t.closed.Store(true)
	t.life.Unlock()
	t.mu.Lock()
	eps := t.endpoints
	t.endpoints = map[string]*tcpEndpoint{}
	t.mu.Unlock()
	for _, ep := range eps {
		ep.mu.Lock()
		conns := append([]*tcpConn(nil), ep.conns...)
		waiting := ep.waiting
		ep.waiting = nil
		ep.mu.Unlock()
		for _, c := range conns {
			c.fail(ErrClosed)
		}
		for _, a := range waiting {
			a.finish(ErrClosed)
		}
	}
	// The engine's context is cancelled, so dials end promptly, and a
	// dial that succeeds now finds the transport closed.
	t.workers.Wait()
}

package delivery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// brokerConn is one connection to a queue broker.
type brokerConn interface {
	// broken reports a connection that is gone for good: dial again.
	broken() bool
	close()
}

// brokers keeps one connection per broker for a queue sink. The first
// attempt that needs a connection starts its dial and the attempts that
// follow wait for it. When a dial fails the broker is down for a backoff
// (Config.RedialMin doubling up to RedialMax, jittered) during which its
// attempts fail at once with ErrUnreachable, as for raw TCP endpoints. A
// connection unused for Config.IdleTimeout is closed.
type brokers[C brokerConn] struct {
	e    *Engine
	dial func(ctx context.Context, key string) (C, error)

	mu     sync.Mutex
	conns  map[string]*brokerEntry[C]
	closed bool
	dials  sync.WaitGroup // added to under mu while not closed
}

type brokerEntry[C brokerConn] struct {
	current   *brokerDial[C]
	failures  int // dials failed in a row
	downUntil time.Time
	users     int // attempts holding the connection
	lastUsed  time.Time
}

// brokerDial is one dial; its fields are set before ready is closed.
type brokerDial[C brokerConn] struct {
	ready chan struct{}
	conn  C
	err   error
}

func newBrokers[C brokerConn](e *Engine, dial func(ctx context.Context, key string) (C, error)) *brokers[C] {
	return &brokers[C]{e: e, dial: dial, conns: map[string]*brokerEntry[C]{}}
}

// acquire returns the connection to key, dialling it if needed. The
// caller must call release once done with it, when err is nil.
func (b *brokers[C]) acquire(ctx context.Context, key string, now time.Time) (conn C, release func(), err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return conn, nil, ErrClosed
	}
	ent := b.conns[key]
	if ent == nil {
		ent = &brokerEntry[C]{}
		b.conns[key] = ent
	}
	d := ent.current
	var stale *brokerDial[C] // a broken connection, closed once unlocked
	if d != nil && d.done() && (d.err != nil || d.conn.broken()) {
		if d.err != nil && now.Before(ent.downUntil) {
			b.mu.Unlock()
			return conn, nil, dialError(fmt.Errorf("redialling in %v after: %w", ent.downUntil.Sub(now).Round(time.Millisecond), d.err))
		}
		if d.err == nil {
			stale = d
		}
		d = nil
	}
	if d == nil {
		d = &brokerDial[C]{ready: make(chan struct{})}
		ent.current = d
		b.dials.Add(1)
		go b.run(key, ent, d)
	}
	ent.users++
	ent.lastUsed = now
	b.mu.Unlock()
	if stale != nil {
		stale.conn.close()
	}
	release = func() {
		b.mu.Lock()
		ent.users--
		b.mu.Unlock()
	}
	select {
	case <-d.ready:
	case <-ctx.Done():
		release()
		return conn, nil, ErrClosed // the attempt has ended
	}
	if d.err != nil {
		release()
		return conn, nil, dialError(d.err)
	}
	return d.conn, release, nil
}

func (d *brokerDial[C]) done() bool {
	select {
	case <-d.ready:
		return true
	default:
		return false
	}
}

// run dials for d and records the result in ent.
func (b *brokers[C]) run(key string, ent *brokerEntry[C], d *brokerDial[C]) {
	defer b.dials.Done()
	ctx, cancel := context.WithTimeout(b.e.ctx, b.e.cfg.DefaultTimeout)
	conn, err := b.dial(ctx, key)
	cancel()
	cfg := &b.e.cfg
	b.mu.Lock()
	late := err == nil && b.closed // close missed this connection
	if late {
		err = ErrClosed
	}
	if err != nil {
		b.e.metrics.dialFails.Inc()
		ent.failures++
		backoff := cfg.RedialMin << min(ent.failures-1, 30)
		if backoff > cfg.RedialMax || backoff <= 0 {
			backoff = cfg.RedialMax
		}
		backoff -= time.Duration(float64(backoff) * 0.2 * rand.Float64())
		ent.downUntil = cfg.Clock.Now().Add(backoff)
	} else {
		ent.failures = 0
	}
	d.conn, d.err = conn, err
	close(d.ready)
	b.mu.Unlock()
	if late {
		conn.close()
	}
}

// sweep closes connections that no attempt holds and that have been
// unused since before cutoff.
func (b *brokers[C]) sweep(cutoff time.Time) {
	b.mu.Lock()
	var idle []C
	for key, ent := range b.conns {
		d := ent.current
		if ent.users > 0 || !ent.lastUsed.Before(cutoff) || (d != nil && !d.done()) {
			continue
		}
		if d != nil && d.err == nil {
			idle = append(idle, d.conn)
		}
		delete(b.conns, key)
	}
	b.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// close closes every connection, failing the attempts that use them, and
// waits for dials under way, which the engine's context cuts short.
func (b *brokers[C]) close() {
	b.mu.Lock()
	b.closed = true
	var open []C
	for _, ent := range b.conns {
		if d := ent.current; d != nil && d.done() && d.err == nil {
			open = append(open, d.conn)
		}
	}
	b.conns = map[string]*brokerEntry[C]{}
	b.mu.Unlock()
	for _, c := range open {
		c.close()
	}
	b.dials.Wait()
}

package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// udpTransport sends each attempt as one datagram holding a Delivery
// message. There is no answer: an attempt succeeds once the datagram is
// handed to the operating system, so UDP delivery is at most once. Each
// endpoint has a connected socket and a sender goroutine that writes what
// has queued.
type udpTransport struct {
	e *Engine

	mu        sync.Mutex
	endpoints map[string]*udpEndpoint
	closed    bool
	senders   sync.WaitGroup // added to under mu while not closed
}

type udpEndpoint struct {
	t    *udpTransport
	addr string

	mu       sync.Mutex
	out      []*attempt
	spare    []*attempt
	lastUsed time.Time
	dead     bool

	wake chan struct{}
	quit chan struct{}
}

func newUDPTransport(e *Engine) *udpTransport {
	return &udpTransport{e: e, endpoints: map[string]*udpEndpoint{}}
}

func (t *udpTransport) contextual() bool { return false }

func (t *udpTransport) send(a *attempt) {
	for {
		ep, err := t.endpoint(a.route.endpoint)
		if err != nil {
			go a.finish(err)
			return
		}
		if ep.enqueue(a) {
			return
		}
		// The endpoint was swept as this attempt arrived: take a new one.
	}
}

func (t *udpTransport) endpoint(addr string) (*udpEndpoint, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	ep := t.endpoints[addr]
	if ep == nil {
		ep = &udpEndpoint{t: t, addr: addr, wake: make(chan struct{}, 1), quit: make(chan struct{})}
		t.endpoints[addr] = ep
		t.senders.Add(1)
		go ep.run()
	}
	return ep, nil
}

func (ep *udpEndpoint) enqueue(a *attempt) bool {
	ep.mu.Lock()
	if ep.dead {
		ep.mu.Unlock()
		return false
	}
	ep.out = append(ep.out, a)
	ep.lastUsed = a.begun
	first := len(ep.out) == 1
	ep.mu.Unlock()
	if first {
		select {
		case ep.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// run dials the endpoint (a name may need resolving, so not on the
// caller's goroutine) and sends until the endpoint is closed.
func (ep *udpEndpoint) run() {
	defer ep.t.senders.Done()
	ctx, cancel := context.WithTimeout(ep.t.e.ctx, ep.t.e.cfg.DefaultTimeout)
	nc, err := ep.t.e.dialer().DialContext(ctx, "udp", ep.addr)
	cancel()
	if err != nil {
		// Forget the endpoint so a later attempt resolves it again.
		ep.stop(dialError(fmt.Errorf("%s: %w", ep.addr, err)))
		return
	}
	defer nc.Close()
	var m boomerangv1.Delivery
	var buf []byte
	for {
		select {
		case <-ep.wake:
		case <-ep.quit:
			return
		}
		ep.mu.Lock()
		batch := ep.out
		ep.out, ep.spare = ep.spare[:0], nil
		ep.mu.Unlock()
		now := ep.t.e.cfg.Clock.Now().UnixMilli()
		for _, a := range batch {
			if a.over() {
				continue
			}
			a.message(&m, now)
			buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], &m)
			switch {
			case err != nil:
				err = permanent(fmt.Errorf("%w: encoding: %w", ErrInvalidCallback, err))
			case len(buf) > MaxUDPDatagram:
				err = permanent(fmt.Errorf("%w: datagram of %d bytes exceeds %d", ErrInvalidCallback, len(buf), MaxUDPDatagram))
			default:
				if _, werr := nc.Write(buf); werr != nil {
					// Not sent (a refusal reported by an earlier ICMP
					// message, a full buffer): safe to retry.
					err = fmt.Errorf("%w: %s: %w", ErrUnreachable, ep.addr, werr)
				}
			}
			a.finish(err)
		}
		m.Payload = nil
		clear(batch)
		ep.mu.Lock()
		if cap(batch) <= 4096 {
			ep.spare = batch[:0]
		}
		ep.mu.Unlock()
	}
}

// stop closes the endpoint and fails what it holds with err.
func (ep *udpEndpoint) stop(err error) {
	ep.mu.Lock()
	if ep.dead {
		ep.mu.Unlock()
		return
	}
	ep.dead = true
	out := ep.out
	ep.out = nil
	ep.mu.Unlock()
	ep.shutdown()
	for _, a := range out {
		a.finish(err)
	}
}

func (ep *udpEndpoint) shutdown() {
	close(ep.quit)
	ep.t.mu.Lock()
	if ep.t.endpoints[ep.addr] == ep {
		delete(ep.t.endpoints, ep.addr)
	}
	ep.t.mu.Unlock()
}

// sweep closes endpoints with nothing queued that have been unused since
// before cutoff. An attempt that finds its endpoint closed opens a new one.
func (t *udpTransport) sweep(cutoff time.Time) {
	t.mu.Lock()
	var idle []*udpEndpoint
	for _, ep := range t.endpoints {
		ep.mu.Lock()
		if len(ep.out) == 0 && ep.lastUsed.Before(cutoff) && !ep.dead {
			ep.dead = true // enqueue now refuses, so nothing is stranded
			idle = append(idle, ep)
		}
		ep.mu.Unlock()
	}
	t.mu.Unlock()
	for _, ep := range idle {
		ep.shutdown()
	}
}

func (t *udpTransport) close() {
	t.mu.Lock()
	t.closed = true
	eps := make([]*udpEndpoint, 0, len(t.endpoints))
	for _, ep := range t.endpoints {
		eps = append(eps, ep)
	}
	t.mu.Unlock()
	for _, ep := range eps {
		ep.stop(ErrClosed)
	}
	t.senders.Wait()
}

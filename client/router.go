package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Routing bounds: a request is sent at most maxRouteAttempts times and,
// once routeWindow has passed since its first attempt, once more only;
// the last attempt goes through the Client's own connection without
// route, so that its node forwards it as it would for a client that
// does not route. Before an attempt that follows a NOT_LEADER naming no
// leader, a node that cannot be reached or a BUSY answer (a shard
// changing leaders: an election takes a second or two) it waits
// routeBackoff, doubling up to maxRouteBackoff. A failed fetch of the
// view is tried again after fetchRetry at the soonest.
const (
	maxRouteAttempts = 32
	routeWindow      = 10 * time.Second
	routeBackoff     = 20 * time.Millisecond
	maxRouteBackoff  = 500 * time.Millisecond
	fetchRetry       = time.Second
)

// router sends requests straight to their shards' leaders over
// connections it opens to the other nodes as it needs them, with the
// Client's session (sessions are valid on every node).
type router struct {
	c        *Client
	view     atomic.Pointer[routes] // nil until fetched
	spread   atomic.Uint32
	fetching atomic.Bool // a background refresh runs

	fetchMu   sync.Mutex // one first fetch at a time
	fetchedAt time.Time  // of the last failed first fetch

	mu     sync.Mutex
	peers  map[string]*peer // by address
	closed bool
}

// peer is the connection to one other node, dialed when first needed
// and again after it breaks.
type peer struct {
	mu   sync.Mutex // one dial at a time
	live atomic.Pointer[conn]
}

func newRouter(c *Client) *router { return &router{c: c, peers: map[string]*peer{}} }

// roundTrip sends req to its shard's leader and returns the response. A
// NOT_LEADER answer sends it on to the leader named, a node that cannot
// be reached sends it through the Client's own connection, and a
// connection that broke with req in flight, or a BUSY answer (such as a
// shard that changed leaders while req was under way: it may or may not
// have taken effect), sends it again if req is repeatable; meanwhile the
// view is refreshed. None of these reach the caller, within the bounds
// above.
func (r *router) roundTrip(ctx context.Context, req *boomerangv1.Request) (*boomerangv1.Response, error) {
	v := r.routesFor(ctx, req)
	if v == nil {
		req.Route = false
		return r.c.roundTrip(ctx, req)
	}
	addr := v.target(req, &r.spread)
	b := backoff{wait: routeBackoff, until: time.Now().Add(routeWindow)}
	for attempt := 1; ; attempt++ {
		last := attempt == maxRouteAttempts || time.Now().After(b.until)
		if last {
			addr = ""
		}
		req.Route = !last
		resp, err := r.via(ctx, req, addr)
		status := resp.GetError().GetStatus()
		home := false // the next attempt goes through the Client's own connection
		switch {
		case last:
			return resp, err
		case err == nil && status == boomerangv1.Status_STATUS_NOT_LEADER:
			if addr = r.learn(resp.GetError().GetNotLeader()); addr != "" {
				continue
			}
		case errors.Is(err, errNotSent), errors.Is(err, ErrConnectionLost) && repeatable(req):
			// The node cannot be reached, or went: the node dialed can,
			// though it may still name the other one for a while.
			home = true
		case err == nil && status == boomerangv1.Status_STATUS_BUSY && repeatable(req):
			// Overloaded, or the shard changed leaders while the request
			// was under way: a repeatable request asks again.
		default:
			if errors.Is(err, ErrConnectionLost) {
				r.refreshSoon()
			}
			return resp, err
		}
		r.refreshSoon()
		if err := b.pause(ctx); err != nil {
			return nil, err
		}
		addr = ""
		if !home {
			addr = r.view.Load().target(req, &r.spread)
		}
	}
}

// backoff spaces a request's attempts while its shard has no leader to
// go to.
type backoff struct {
	wait  time.Duration
	until time.Time // no routed attempt after it
}

// pause waits before the next attempt, or until ctx ends.
func (b *backoff) pause(ctx context.Context) error {
	t := time.NewTimer(b.wait)
	defer t.Stop()
	b.wait = min(2*b.wait, maxRouteBackoff)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client: waiting for a shard's leader: %w", ctx.Err())
	}
}

// via sends req over the connection to addr, or the Client's own for "".
func (r *router) via(ctx context.Context, req *boomerangv1.Request, addr string) (*boomerangv1.Response, error) {
	if addr == "" {
		return r.c.roundTrip(ctx, req)
	}
	return r.c.roundTripOn(ctx, req, func(ctx context.Context) (*conn, error) { return r.peerConn(ctx, addr) })
}

// routesFor returns the view to route req by, fetching the first one,
// or nil when req goes through the Client's own connection as it is:
// it is not routable, the server is standalone, or no view is known.
func (r *router) routesFor(ctx context.Context, req *boomerangv1.Request) *routes {
	if !routable(req) {
		return nil
	}
	v := r.view.Load()
	if v == nil {
		v = r.first(ctx)
	}
	if v == nil || v.standalone {
		return nil
	}
	return v
}

// first fetches the first view, or returns nil if that failed (and
// failed less than fetchRetry ago).
func (r *router) first(ctx context.Context) *routes {
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	if v := r.view.Load(); v != nil || time.Since(r.fetchedAt) < fetchRetry {
		return v
	}
	if err := r.fetch(ctx); err != nil {
		r.fetchedAt = time.Now()
		r.c.log.Warn("fetching the routing view failed; requests go through the node dialed", "err", err)
	}
	return r.view.Load()
}

// fetch asks the Client's node for the routing view. It takes no request
// slot: the requests waiting for the view hold them all, perhaps. A
// server that does not know GetRoutes does not route: it is standalone
// for the Client.
func (r *router) fetch(ctx context.Context) error {
	req := &boomerangv1.Request{SessionId: r.c.sess.id(), Body: &boomerangv1.Request_GetRoutes{GetRoutes: &boomerangv1.GetRoutesRequest{}}}
	resp, err := r.c.roundTrip(ctx, req)
	if err == nil && resp.GetError() != nil {
		err = newError(resp.GetError())
	}
	switch {
	case unknownOperation(err):
		r.view.Store(&routes{standalone: true})
		return nil
	case err != nil:
		return err
	case resp.GetGetRoutes() == nil:
		return fmt.Errorf("%w: the response to GetRoutes has no body", ErrProtocol)
	}
	nv := newRoutes(resp.GetGetRoutes())
	if old := r.view.Load(); old == nil || nv.revision >= old.revision {
		r.view.Store(nv)
	}
	return nil
}

// learn keeps a NOT_LEADER hint until the next view, asks for that view
// when the hint is newer than the one held, and returns where to send
// the request next ("" when the hint names no leader).
func (r *router) learn(hint *boomerangv1.NotLeader) string {
	v := r.view.Load()
	if hint.GetRevision() > v.revision || hint.GetLeaderTcpAddress() == "" {
		r.refreshSoon()
	}
	if hint.GetLeaderTcpAddress() == "" || hint.GetLeaderId() == v.self {
		return ""
	}
	if hint.GetShard() < uint32(v.shards) {
		r.view.CompareAndSwap(v, v.withLeader(uint16(hint.GetShard()), hint.GetLeaderId(), hint.GetLeaderTcpAddress()))
	}
	return hint.GetLeaderTcpAddress()
}

// refreshSoon fetches the view in the background, unless a fetch runs.
func (r *router) refreshSoon() {
	if !r.fetching.CompareAndSwap(false, true) {
		return
	}
	if !r.c.background(func() {
		defer r.fetching.Store(false)
		ctx, cancel := context.WithTimeout(r.c.life, r.c.opts.dialTimeout)
		defer cancel()
		if err := r.fetch(ctx); err != nil {
			r.c.log.Debug("refreshing the routing view failed", "err", err)
		}
	}) {
		r.fetching.Store(false)
	}
}

// peerConn returns the connection to the node at addr, dialing it if
// there is none. A dial that fails wraps errNotSent.
func (r *router) peerConn(ctx context.Context, addr string) (*conn, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	p := r.peers[addr]
	if p == nil {
		p = &peer{}
		r.peers[addr] = p
	}
	r.mu.Unlock()
	if cn := p.live.Load(); cn != nil {
		return cn, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cn := p.live.Load(); cn != nil {
		return cn, nil
	}
	nc, err := r.c.dialAddr(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotSent, err)
	}
	cn := newConn(nc, r.c.opts.maxResponse, func(cn *conn, cause error, inFlight int) {
		p.live.CompareAndSwap(cn, nil)
		if inFlight > 0 {
			r.c.log.Warn("connection to a node lost", "addr", addr, "err", cause, "failed_requests", inFlight)
		}
	})
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		cn.close(ErrClosed)
		return nil, ErrClosed
	}
	p.live.Store(cn)
	return cn, nil
}

// close closes the connections to the other nodes.
func (r *router) close() {
	r.mu.Lock()
	r.closed = true
	peers := r.peers
	r.peers = nil
	r.mu.Unlock()
	for _, p := range peers {
		p.mu.Lock()
		if cn := p.live.Swap(nil); cn != nil {
			cn.close(ErrClosed)
		}
		p.mu.Unlock()
	}
}

package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Credentials are a registered client's id and password. With them a
// Client logs in at Dial and again whenever its session expires or the
// server forgets it (after a restart).
type Credentials struct {
	ClientID string
	Password string
}

// Client is a connection to a Boomerang server over raw TCP. It is safe
// for concurrent use: calls from many goroutines share one connection and
// are pipelined on it.
type Client struct {
	addr  string
	creds Credentials
	opts  options
	log   *slog.Logger

	ids   atomic.Uint64
	slots chan struct{} // one token per request in flight

	live atomic.Pointer[conn] // cur, for the fast path of calls

	mu      sync.Mutex
	cur     *conn         // nil while reconnecting
	ready   chan struct{} // closed when cur is set again, or on Close
	closed  bool
	dialErr error // why the last reconnection attempt failed

	batcher *coalescer // gathers Schedule calls; nil when off
	router  *router    // sends requests to their shards' leaders; nil when off

	sess     sessionState
	loginMu  sync.Mutex   // one login at a time
	maxFrame atomic.Int64 // the server's frame limit; 0 = unknown

	stop chan struct{}   // closed by Close
	life context.Context // canceled by Close: bounds background dials and refreshes
	end  context.CancelFunc
	bg   sync.WaitGroup
}

// Dial connects to the server at addr (host:port). With credentials it
// logs in; with WithSession it adopts that session instead. Either way it
// then asks for the server's limits, which also proves the session
// works. Without credentials or session it only connects: call Login.
//
// ctx bounds Dial only; the Client lives until Close.
func Dial(ctx context.Context, addr string, creds Credentials, opts ...Option) (*Client, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("client: bad address %q: %w", addr, err)
	}
	o := newOptions(opts)
	c := &Client{
		addr:  addr,
		creds: creds,
		opts:  o,
		log:   o.logger,
		slots: make(chan struct{}, o.maxInFlight),
		ready: make(chan struct{}),
		stop:  make(chan struct{}),
	}
	c.life, c.end = context.WithCancel(context.Background())
	if o.routing {
		c.router = newRouter(c)
	}
	if o.linger > 0 {
		c.batcher = newCoalescer(c, o.linger)
	}
	c.sess.init()
	nc, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.install(nc)
	c.bg.Add(1)
	go c.refreshLoop()
	if err := c.handshake(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) handshake(ctx context.Context) error {
	switch {
	case c.opts.session.ID != "":
		c.sess.set(c.opts.session, time.Now())
	case c.hasCredentials():
		if _, err := c.Login(ctx, &boomerangv1.LoginRequest{ClientId: c.creds.ClientID, Password: c.creds.Password}); err != nil {
			return err
		}
	default:
		return nil
	}
	info, err := c.GetServerInfo(ctx, &boomerangv1.GetServerInfoRequest{})
	if err != nil {
		return err
	}
	c.maxFrame.Store(int64(info.GetMaxFrameBytes()))
	return nil
}

func (c *Client) hasCredentials() bool { return c.creds.ClientID != "" }

// Addr is the server address the Client dials.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection. Calls in flight fail with ErrClosed (wrapped
// in ErrConnectionLost); later calls fail with ErrClosed. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cur := c.cur
	if cur == nil {
		close(c.ready) // wake callers waiting for a reconnection
	}
	c.cur = nil
	c.live.Store(nil)
	close(c.stop)
	c.end()
	c.mu.Unlock()
	if cur != nil {
		cur.close(ErrClosed)
	}
	if c.router != nil {
		c.router.close()
	}
	c.bg.Wait()
	return nil
}

// background runs fn in a goroutine Close waits for, and reports false,
// without running it, once the Client is closed.
func (c *Client) background(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.bg.Go(fn)
	return true
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) { return c.dialAddr(ctx, c.addr) }

// dialAddr connects to the node at addr.
func (c *Client) dialAddr(ctx context.Context, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: c.opts.dialTimeout}
	var nc net.Conn
	var err error
	if c.opts.tls != nil {
		// The handshake happens here, so a certificate problem is a dial
		// error rather than a broken connection later.
		nc, err = (&tls.Dialer{NetDialer: d, Config: c.opts.tls}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("client: cannot connect to %s: %w", addr, err)
	}
	return nc, nil
}

// install makes nc the current connection and wakes waiting callers. A
// connection that failed before it was installed (a TLS server refusing
// the client's certificate closes it at once) is not installed: the
// Client reconnects instead, and reports why while it waits.
func (c *Client) install(nc net.Conn) {
	cn := newConn(nc, c.opts.maxResponse, c.lost)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cn.close(ErrClosed)
		return
	}
	if err := cn.failure(); err != nil {
		c.dialErr = err
		c.bg.Add(1)
		go c.reconnect()
		c.mu.Unlock()
		return
	}
	c.cur = cn
	c.live.Store(cn)
	c.dialErr = nil
	close(c.ready)
	c.mu.Unlock()
}

// lost is called once by a connection that failed, with the number of
// requests that failed with it. Unless the Client is closing, it starts
// reconnecting.
func (c *Client) lost(cn *conn, cause error, inFlight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.cur != cn {
		return
	}
	c.cur = nil
	c.live.Store(nil)
	c.ready = make(chan struct{})
	if inFlight > 0 {
		c.log.Warn("connection lost; reconnecting", "addr", c.addr, "err", cause, "failed_requests", inFlight)
	} else {
		// Typically the server closing an idle connection.
		c.log.Info("connection closed; reconnecting", "addr", c.addr, "err", cause)
	}
	c.bg.Add(1)
	go c.reconnect()
}

// reconnect dials with exponential backoff and jitter until it succeeds
// or the Client closes.
func (c *Client) reconnect() {
	defer c.bg.Done()
	wait := c.opts.reconnectMin
	for attempt := 1; ; attempt++ {
		timer := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-c.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(c.life, c.opts.dialTimeout)
		nc, err := c.dial(ctx)
		cancel()
		if err == nil {
			c.log.Info("reconnected", "addr", c.addr, "attempts", attempt)
			c.install(nc)
			return
		}
		c.mu.Lock()
		c.dialErr = err
		c.mu.Unlock()
		wait = min(2*wait, c.opts.reconnectMax)
	}
}

// conn returns the current connection, waiting for a reconnection if
// needed.
func (c *Client) conn(ctx context.Context) (*conn, error) {
	if cn := c.live.Load(); cn != nil {
		return cn, nil
	}
	for {
		c.mu.Lock()
		cur, ready, closed, dialErr := c.cur, c.ready, c.closed, c.dialErr
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case cur != nil:
			return cur, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			if dialErr != nil {
				return nil, fmt.Errorf("client: not connected (%w): %w", dialErr, ctx.Err())
			}
			return nil, fmt.Errorf("client: not connected: %w", ctx.Err())
		}
	}
}

// do sends req and returns the server's successful response, or an error:
// an *Error for a refused request, ErrConnectionLost, ErrClosed, or the
// context's error.
//
// A request refused for its session (expired, or unknown after a refresh
// or a server restart) is sent once more: with the current session if
// another call has replaced it meanwhile, else after logging in again when
// the Client has credentials.
func (c *Client) do(ctx context.Context, req *boomerangv1.Request) (*boomerangv1.Response, error) {
	return c.doWith(ctx, req, c.send)
}

// doWith is do with send making each round trip.
func (c *Client) doWith(ctx context.Context, req *boomerangv1.Request,
	send func(context.Context, *boomerangv1.Request) (*boomerangv1.Response, error)) (*boomerangv1.Response, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("client: waiting for a request slot: %w", ctx.Err())
	}
	defer func() { <-c.slots }()

	_, isLogin := req.GetBody().(*boomerangv1.Request_Login)
	if !isLogin {
		req.SessionId = c.sess.id()
	}
	resp, err := send(ctx, req)
	if err == nil && !isLogin && sessionRefused(resp.GetError()) {
		if c.renewSession(ctx, req.SessionId) {
			req.SessionId = c.sess.id()
			resp, err = send(ctx, req)
		}
	}
	if err != nil {
		return nil, err
	}
	if e := resp.GetError(); e != nil {
		return nil, newError(e)
	}
	return resp, nil
}

func sessionRefused(e *boomerangv1.Error) bool {
	s := e.GetStatus()
	return s == boomerangv1.Status_STATUS_SESSION_EXPIRED || s == boomerangv1.Status_STATUS_UNAUTHORIZED
}

// send sends one request, to its shard's leader when routing, and waits
// for its response.
func (c *Client) send(ctx context.Context, req *boomerangv1.Request) (*boomerangv1.Response, error) {
	if c.router == nil {
		return c.roundTrip(ctx, req)
	}
	return c.router.roundTrip(ctx, req)
}

// roundTrip sends one request over the Client's own connection and waits
// for its response.
func (c *Client) roundTrip(ctx context.Context, req *boomerangv1.Request) (*boomerangv1.Response, error) {
	return c.roundTripOn(ctx, req, c.conn)
}

// roundTripOn sends one request over the connection connOf returns and
// waits for its response.
func (c *Client) roundTripOn(ctx context.Context, req *boomerangv1.Request, connOf func(context.Context) (*conn, error)) (*boomerangv1.Response, error) {
	req.RequestId = c.ids.Add(1)
	buf := framePool.Get().(*[]byte)
	defer framePool.Put(buf)
	frame, size, err := encode((*buf)[:0], req)
	if err != nil {
		return nil, err
	}
	if cap(frame) <= maxPooledFrame {
		*buf = frame // keep the grown buffer; send copies the frame
	}
	if limit := c.maxFrame.Load(); limit > 0 && int64(size) > limit {
		return nil, c.tooLarge(size)
	}
	cl := &call{id: req.RequestId, result: make(chan result, 1)}
	for {
		cn, err := connOf(ctx)
		if err != nil {
			return nil, err
		}
		if err := cn.send(cl, frame); errors.Is(err, errNotSent) {
			runtime.Gosched() // let the failed connection hand over
			continue          // never written: it may go out on the next connection
		}
		select {
		case r := <-cl.result:
			if r.err == nil {
				c.adopt(r.resp)
			}
			return r.resp, r.err
		case <-ctx.Done():
			cn.abandon(cl.id)
			return nil, fmt.Errorf("client: waiting for the response: %w", ctx.Err())
		}
	}
}

// adopt takes the session from a successful login or refresh.
func (c *Client) adopt(resp *boomerangv1.Response) {
	if resp.GetError() != nil {
		return
	}
	switch b := resp.GetBody().(type) {
	case *boomerangv1.Response_Login:
		c.sess.set(Session{
			ID:        b.Login.GetSessionId(),
			ExpiresAt: time.UnixMilli(b.Login.GetExpiresAtMs()),
			Admin:     b.Login.GetAdmin(),
			Role:      b.Login.GetRole(),
		}, time.Now())
	case *boomerangv1.Response_RefreshSession:
		old := c.Session()
		c.sess.set(Session{
			ID:        b.RefreshSession.GetSessionId(),
			ExpiresAt: time.UnixMilli(b.RefreshSession.GetExpiresAtMs()),
			Admin:     old.Admin,
			Role:      old.Role,
		}, time.Now())
	case *boomerangv1.Response_Logout:
		c.sess.set(Session{}, time.Now())
	}
}

// framePool recycles encoding buffers: a frame is copied into the
// connection's outbox, so its buffer is free once sent.
var framePool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledFrame is the largest buffer kept in framePool.
const maxPooledFrame = 64 << 10

// encode appends req to buf as one length-delimited frame, and returns
// the frame and the size of the message in it.
func encode(buf []byte, req *boomerangv1.Request) ([]byte, int, error) {
	size := proto.Size(req)
	buf = protowire.AppendVarint(buf, uint64(size))
	buf, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, req)
	if err != nil {
		return nil, 0, fmt.Errorf("client: encoding the request: %w", err)
	}
	return buf, size, nil
}

package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Buffer sizes of a connection, about 20 KiB in all. Frame bodies up to
// scratchBytes reuse one buffer (decoding copies what it keeps); larger
// ones are allocated for the frame.
const (
	readBuffer   = 8 << 10
	writeBuffer  = 8 << 10
	scratchBytes = 4 << 10
)

// conn is one raw TCP connection. Its reader decodes requests and starts a
// goroutine for each; the responses go through out to its writer, the only
// goroutine that writes to the socket.
//
// Each request holds a slot from being read until its response is
// flushed, and bytes of the connection's and the server's budgets: its
// frame from its length prefix on, and what its response may take, cut
// to the response's size once it is made. The first connAllowance bytes a
// connection holds do not count against the server's budget, so a
// connection with little outstanding is never held up by others. The
// reader takes a slot before it reads a frame and the bytes before it
// reads the frame's body, so with MaxInFlight requests outstanding or a
// budget spent it stops reading, and the client's writes back up into
// its socket: memory per connection and in all stays bounded. out has room for every slot and
// the final error frame, so sending to it never blocks.
type conn struct {
	t       *tcpServer
	nc      net.Conn
	id      uint64
	source  string          // remote address
	loginBy time.Time       // a connection that has not logged in by then is closed
	ctx     context.Context // cancelled when the server gives up waiting
	cancel  context.CancelFunc

	loggedIn    atomic.Bool
	loggingIn   atomic.Int32 // requests under way that may log it in
	pendingDone atomic.Bool  // no longer counted as waiting to log in
	budget      *byteBudget
	allowance   atomic.Int64 // left of connAllowance

	slots    chan struct{}
	out      chan outbound
	handlers sync.WaitGroup // requests running
}

// outbound is a response on its way to the writer.
type outbound struct {
	resp     *boomerangv1.Response
	op       string
	received time.Time
	hold     hold // budget bytes, given back once written
	final    bool // the connection's error frame: holds no slot
}

func newConn(t *tcpServer, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	n := t.cfg.MaxInFlight
	c := &conn{
		t: t, nc: nc, id: id, source: nc.RemoteAddr().String(), ctx: ctx, cancel: cancel,
		loginBy: time.Now().Add(t.cfg.HandshakeTimeout),
		budget:  newByteBudget(t.cfg.MaxConnBufferBytes),
		slots:   make(chan struct{}, n),
		out:     make(chan outbound, n+1),
	}
	c.allowance.Store(connAllowance)
	return c
}

// readLoop reads requests until the stream ends, breaks, times out or the
// server stops; then it waits for the requests it started and queues the
// error frame, if any, last.
func (c *conn) readLoop() {
	defer c.t.wg.Done()
	final := c.readRequests()
	c.handlers.Wait()
	if final != nil {
		c.out <- outbound{resp: final, final: true}
	}
	close(c.out)
}

// readRequests returns the error frame to close the connection with, or
// nil to close it silently (the client closed it, or it broke).
func (c *conn) readRequests() *boomerangv1.Response {
	br := bufio.NewReaderSize(c.nc, readBuffer)
	scratch := make([]byte, 0, scratchBytes)
	idleSince := time.Now()
	var regs []pendingRequest // registrations read together (coalesce.go)
	defer func() { c.dispatch(regs) }()
	for {
		if len(regs) > 0 && (len(regs) >= maxCoalesced || !wholeFrameBuffered(br)) {
			regs = c.dispatch(regs)
		}
		if !c.takeSlot(&regs) {
			return connError(ErrStopping)
		}
		req, h, err := c.readRequest(br, &idleSince, scratch)
		var bad *badRequest
		switch {
		case errors.As(err, &bad):
			// The envelope parsed: only this request fails.
			c.out <- outbound{resp: &boomerangv1.Response{RequestId: bad.id, Error: ErrorOf(bad.err)}, op: "unknown", received: time.Now(), hold: h}
		case err != nil:
			<-c.slots
			return c.readFailed(err)
		case c.loggedIn.Load() && coalescable(req):
			regs = append(regs, pendingRequest{req: req, received: time.Now(), hold: h})
		default:
			regs = c.dispatch(regs)
			c.handlers.Add(1)
			login := !c.loggedIn.Load() && logsIn(req)
			if login {
				c.loggingIn.Add(1)
			}
			go c.run(req, time.Now(), h, login)
		}
		idleSince = time.Now()
	}
}

// pendingRequest is a request read and not yet handed to a handler.
type pendingRequest struct {
	req      *boomerangv1.Request
	received time.Time
	hold     hold
}

// takeSlot waits for a slot for the next request; registrations read
// before are handed over first if it would have to wait. False: the
// server is stopping.
func (c *conn) takeSlot(regs *[]pendingRequest) bool {
	if len(*regs) > 0 {
		select {
		case c.slots <- struct{}{}:
			return true
		default:
			*regs = c.dispatch(*regs)
		}
	}
	select {
	case c.slots <- struct{}{}:
		return true
	case <-c.t.stop:
		return false
	}
}

// dispatch hands the registrations read together to a handler, and
// returns regs emptied.
func (c *conn) dispatch(regs []pendingRequest) []pendingRequest {
	switch len(regs) {
	case 0:
		return regs
	case 1:
		c.handlers.Add(1)
		go c.run(regs[0].req, regs[0].received, regs[0].hold, false) // coalesced: logged in
	default:
		c.handlers.Add(1)
		go c.runRegisters(regs)
	}
	return nil
}

// runRegisters answers registrations read together, each with its own
// response.
func (c *conn) runRegisters(regs []pendingRequest) {
	defer c.handlers.Done()
	reqs := make([]*boomerangv1.Request, len(regs))
	for i, r := range regs {
		reqs[i] = r.req
	}
	resps := c.t.svc.HandleRegisters(withPeer(c.ctx, c.source), reqs)
	for i, resp := range resps {
		h := c.shrink(regs[i].hold, proto.Size(resp))
		c.out <- outbound{resp: resp, op: operation(reqs[i]), received: regs[i].received, hold: h}
	}
}

// badRequest is a frame whose envelope parsed but whose operation did
// not.
type badRequest struct {
	id  uint64
	err error
}

func (b *badRequest) Error() string { return b.err.Error() }

// readRequest reads and decodes the next frame, holding the budget its
// frame and its response need.
func (c *conn) readRequest(br *bufio.Reader, idleSince *time.Time, scratch []byte) (*boomerangv1.Request, hold, error) {
	size, err := c.nextFrame(br, idleSince)
	if err != nil {
		return nil, hold{}, err
	}
	h, err := c.reserve(c.t.stopCtx, size)
	if err != nil {
		return nil, hold{}, ErrStopping
	}
	if err := c.nc.SetReadDeadline(c.deadline(time.Now())); err != nil {
		c.release(h)
		return nil, hold{}, err
	}
	body, err := readBody(br, size, scratch)
	if err != nil {
		c.release(h)
		return nil, hold{}, err
	}
	req := new(boomerangv1.Request)
	badID, err := decodeRequest(body, req)
	switch {
	case err != nil && badID == 0:
		c.release(h)
		return nil, hold{}, err
	case err != nil:
		return nil, c.shrink(h, smallResponse), &badRequest{id: badID, err: err}
	}
	more, err := c.reserve(c.t.stopCtx, responseBound(req, size, c.t.cfg.MaxFrameBytes))
	if err != nil {
		c.release(h)
		return nil, hold{}, ErrStopping
	}
	return req, h.plus(more), nil
}

// deadline is when the reader stops waiting for input: IdleTimeout after
// from, and no later than loginBy until the connection has logged in. A
// request that may log it in and is still being checked when loginBy
// passes (a costly password hash on a loaded server) is not late: the
// reader then looks again every loginRecheck until it is answered.
func (c *conn) deadline(from time.Time) time.Time {
	d := from.Add(c.t.cfg.IdleTimeout)
	if c.loggedIn.Load() {
		return d
	}
	by := c.loginBy
	if recheck := time.Now().Add(loginRecheck); c.loggingIn.Load() > 0 && by.Before(recheck) {
		by = recheck
	}
	if by.Before(d) {
		return by
	}
	return d
}

// loginRecheck is how often a reader past its connection's loginBy looks
// whether the login under way was answered.
const loginRecheck = 100 * time.Millisecond

// lateForLogin reports whether the connection has not logged in by
// loginBy, with no request that may log it in under way.
func (c *conn) lateForLogin(now time.Time) bool {
	return !c.loggedIn.Load() && c.loggingIn.Load() == 0 && !now.Before(c.loginBy)
}

// logsIn reports whether req, read before the connection logged in, may
// log it in: a login, or a request with a session.
func logsIn(req *boomerangv1.Request) bool {
	return req.GetLogin() != nil || req.GetSessionId() != ""
}

// nextFrame waits for a frame to begin, then reads its length prefix. An
// idle connection with requests outstanding is not idle: the wait starts
// over.
func (c *conn) nextFrame(br *bufio.Reader, idleSince *time.Time) (int, error) {
	for {
		if err := c.nc.SetReadDeadline(c.deadline(*idleSince)); err != nil {
			return 0, err
		}
		if c.t.stopping() {
			return 0, ErrStopping
		}
		_, err := br.Peek(1)
		if err == nil {
			break
		}
		now := time.Now()
		switch {
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return 0, err
		case c.lateForLogin(now):
			return 0, err
		case len(c.slots) > 1:
			*idleSince = now
		case !now.Before(c.deadline(*idleSince)):
			return 0, err
		}
	}
	if err := c.nc.SetReadDeadline(c.deadline(time.Now())); err != nil {
		return 0, err
	}
	return frameSize(br, c.t.cfg.MaxFrameBytes)
}

// readFailed picks the error frame for a reader that stopped with err.
func (c *conn) readFailed(err error) *boomerangv1.Response {
	switch {
	case c.t.stopping() || errors.Is(err, ErrStopping):
		return connError(ErrStopping)
	case errors.Is(err, ErrFrame):
		c.t.m.brokenFrames.Inc()
		c.t.log.Debug("broken frame; closing connection", "conn", c.id, "remote", c.source, "err", err)
		return connError(err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		what := "no complete frame within the idle timeout"
		if !c.loggedIn.Load() {
			what = "no login within the handshake timeout"
		}
		return connError(fmt.Errorf("%w: %s", ErrTimeout, what))
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return nil
	}
	c.t.log.Debug("connection read failed", "conn", c.id, "err", err)
	return nil
}

// run answers one request, then holds only what its response takes.
// login says it was counted in loggingIn.
func (c *conn) run(req *boomerangv1.Request, received time.Time, h hold, login bool) {
	defer c.handlers.Done()
	resp, loggedIn := c.t.svc.Handle(withPeer(c.ctx, c.source), req)
	if loggedIn && c.loggedIn.CompareAndSwap(false, true) {
		c.t.loggedIn(c)
	}
	if login {
		c.loggingIn.Add(-1)
	}
	h = c.shrink(h, proto.Size(resp))
	c.out <- outbound{resp: resp, op: operation(req), received: received, hold: h}
}

// interrupt makes the reader stop at once, whether it waits for a frame
// or is inside one; requests already read are still answered.
func (c *conn) interrupt() { _ = c.nc.SetReadDeadline(time.Unix(1, 0)) }

// abort cuts the connection: requests still running are cancelled and
// their responses dropped.
func (c *conn) abort() {
	c.cancel()
	_ = c.nc.Close()
}

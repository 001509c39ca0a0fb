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
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

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
// flushed. The reader takes a slot before it reads a frame, so with
// MaxInFlight requests outstanding it stops reading, and the client's
// writes back up into its socket: memory per connection stays bounded.
// out has room for every slot and the final error frame, so sending to it
// never blocks.
type conn struct {
	t      *tcpServer
	nc     net.Conn
	id     uint64
	ctx    context.Context // cancelled when the server gives up waiting
	cancel context.CancelFunc

	slots    chan struct{}
	out      chan outbound
	handlers sync.WaitGroup // requests running
}

// outbound is a response on its way to the writer.
type outbound struct {
	resp     *boomerangv1.Response
	op       string
	received time.Time
	final    bool // the connection's error frame: holds no slot
}

func newConn(t *tcpServer, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	n := t.cfg.MaxInFlight
	return &conn{
		t: t, nc: nc, id: id, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, n),
		out:   make(chan outbound, n+1),
	}
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
	deadline := time.Now().Add(c.t.cfg.HandshakeTimeout)
	first := true
	for {
		select {
		case c.slots <- struct{}{}:
		case <-c.t.stop:
			return connError(ErrStopping)
		}
		if !first {
			deadline = time.Now().Add(c.t.cfg.IdleTimeout)
		}
		body, err := c.nextFrame(br, deadline, first, scratch)
		if err != nil {
			<-c.slots
			return c.readFailed(err, first)
		}
		req := new(boomerangv1.Request)
		badID, err := decodeRequest(body, req)
		received := time.Now()
		switch {
		case err != nil && badID == 0:
			<-c.slots
			return c.readFailed(err, first)
		case err != nil:
			c.out <- outbound{resp: &boomerangv1.Response{RequestId: badID, Error: ErrorOf(err)}, op: "unknown", received: received}
		default:
			c.handlers.Add(1)
			go c.run(req, received)
		}
		first = false
	}
}

// nextFrame waits for a frame to begin before deadline, then reads it
// whole. An idle connection with requests outstanding is not idle: the
// wait starts over.
func (c *conn) nextFrame(br *bufio.Reader, deadline time.Time, first bool, scratch []byte) ([]byte, error) {
	for {
		if err := c.nc.SetReadDeadline(deadline); err != nil {
			return nil, err
		}
		if c.t.stopping() {
			return nil, ErrStopping
		}
		_, err := br.Peek(1)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || first || len(c.slots) <= 1 {
			return nil, err
		}
		deadline = time.Now().Add(c.t.cfg.IdleTimeout)
	}
	if !first {
		if err := c.nc.SetReadDeadline(time.Now().Add(c.t.cfg.IdleTimeout)); err != nil {
			return nil, err
		}
	}
	return readFrame(br, c.t.cfg.MaxFrameBytes, scratch)
}

// readFailed picks the error frame for a reader that stopped with err.
func (c *conn) readFailed(err error, first bool) *boomerangv1.Response {
	switch {
	case c.t.stopping():
		return connError(ErrStopping)
	case errors.Is(err, ErrFrame):
		c.t.m.brokenFrames.Inc()
		c.t.log.Debug("broken frame; closing connection", "conn", c.id, "remote", c.nc.RemoteAddr().String(), "err", err)
		return connError(err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		what := "no complete frame within the idle timeout"
		if first {
			what = "no complete frame within the handshake timeout"
		}
		return connError(fmt.Errorf("%w: %s", ErrTimeout, what))
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return nil
	}
	c.t.log.Debug("connection read failed", "conn", c.id, "err", err)
	return nil
}

// run answers one request.
func (c *conn) run(req *boomerangv1.Request, received time.Time) {
	defer c.handlers.Done()
	resp := c.t.svc.Handle(c.ctx, req)
	c.out <- outbound{resp: resp, op: operation(req), received: received}
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

// writeLoop writes responses as they come, flushing whenever none is
// waiting, so under load many responses share one system call. A request
// releases its slot, and is counted in the metrics, once its response is
// flushed.
func (c *conn) writeLoop() {
	defer c.t.wg.Done()
	bw := bufio.NewWriterSize(c.nc, writeBuffer)
	var unflushed []outbound
	dead := false
	for o := range c.out {
		if !dead {
			if len(unflushed) == 0 {
				dead = c.nc.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout)) != nil
			}
			if _, err := protodelim.MarshalTo(bw, o.resp); err != nil {
				dead = c.writeFailed(err)
			}
		}
		unflushed = append(unflushed, o)
		if len(c.out) > 0 && len(unflushed) < cap(c.out) {
			continue
		}
		if !dead {
			if err := bw.Flush(); err != nil {
				dead = c.writeFailed(err)
			}
		}
		c.settle(unflushed)
		unflushed = unflushed[:0]
	}
	c.settle(unflushed)
	c.close(dead)
	c.cancel()
	c.t.forget(c)
}

// settle counts flushed responses and frees their slots.
func (c *conn) settle(batch []outbound) {
	now := time.Now()
	for _, o := range batch {
		if o.final {
			continue
		}
		c.t.m.observe(o.op, responseStatus(o.resp), now.Sub(o.received))
		<-c.slots
	}
}

// writeFailed drops a connection whose write failed; the reader then
// fails too. Responses still to come are discarded.
func (c *conn) writeFailed(err error) bool {
	_ = c.nc.Close()
	c.t.log.Debug("connection write failed; closing", "conn", c.id, "err", err)
	return true
}

// close ends a connection whose responses are written. A healthy one is
// half-closed first and drained for up to CloseLinger: closing a socket
// with unread input resets it, and a reset can destroy responses the peer
// has not read yet.
func (c *conn) close(dead bool) {
	if tc, ok := c.nc.(*net.TCPConn); ok && !dead && c.ctx.Err() == nil {
		if tc.CloseWrite() == nil {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.t.cfg.CloseLinger))
			_, _ = io.Copy(io.Discard, c.nc)
		}
	}
	_ = c.nc.Close()
}

// responseStatus is OK for a result, else the error's status.
func responseStatus(r *boomerangv1.Response) boomerangv1.Status {
	if r.Error == nil {
		return boomerangv1.Status_STATUS_OK
	}
	return r.Error.Status
}

package oms

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// Buffer sizes of a connection's reader and writer.
const (
	readBuffer  = 64 << 10
	writeBuffer = 64 << 10
)

// conn is one client connection. Its reader decodes orders and admits
// them; the pipeline answers them through send; its writer is the only
// goroutine that writes to the socket.
//
// owed counts orders read whose response has not been queued yet. The
// writer finishes once the reader has stopped and owed is zero, so a
// connection closes only after every order it carried was answered.
type conn struct {
	srv *Server
	nc  net.Conn
	id  uint64

	owed     atomic.Int64
	readDone atomic.Bool
	wake     chan struct{} // capacity 1: "the outbox changed"

	mu    sync.Mutex
	queue []response // waiting for the writer, at most OutboxLimit
	dead  bool       // responses are dropped from now on
}

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	return &conn{srv: s, nc: nc, id: id, wake: make(chan struct{}, 1)}
}

// readLoop decodes and admits orders until the stream ends, breaks, or
// Stop interrupts it.
func (c *conn) readLoop() {
	defer c.srv.readers.Done()
	err := c.readOrders()
	c.readDone.Store(true)
	c.signal()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, net.ErrClosed):
		// The client finished, Stop stopped us, or the connection was
		// dropped: nothing to report.
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrTruncated), errors.Is(err, ErrBadLength):
		c.srv.stats.brokenFrames.Add(1)
		c.srv.log.Warn("broken frame; closing connection after answering its orders",
			"conn", c.id, "remote", c.nc.RemoteAddr().String(), "err", err)
	default:
		c.srv.log.Debug("connection read failed", "conn", c.id, "err", err)
	}
}

func (c *conn) readOrders() error {
	br := bufio.NewReaderSize(c.nc, max(readBuffer, c.srv.cfg.MaxFrame))
	var m omsv1.Order
	for {
		body, err := readFrame(br, c.srv.cfg.MaxFrame)
		if err != nil {
			return err
		}
		o := order{conn: c}
		decodeOrder(body, &m, &o)
		_, _ = br.Discard(len(body))
		o.receivedNs = c.srv.now()
		c.srv.admit(&o)
	}
}

// stopReading makes the reader's next (or current) read fail, ending the
// reader. Orders already admitted are still answered.
func (c *conn) stopReading() { _ = c.nc.SetReadDeadline(time.Unix(1, 0)) }

// send queues a response for the writer. It never blocks: a client so far
// behind that its outbox is full is disconnected, and its responses from
// then on are dropped (and counted).
func (c *conn) send(r response) {
	slow := false
	c.mu.Lock()
	switch {
	case c.dead:
		c.srv.stats.dropped.Add(1)
	case len(c.queue) >= c.srv.cfg.OutboxLimit:
		slow = true
		c.dead = true
		c.srv.stats.dropped.Add(1)
	default:
		c.queue = append(c.queue, r)
	}
	c.owed.Add(-1)
	c.mu.Unlock()
	if slow {
		c.srv.stats.slowConsumers.Add(1)
		c.srv.log.Warn("slow consumer: outbox full, disconnecting",
			"conn", c.id, "remote", c.nc.RemoteAddr().String(), "limit", c.srv.cfg.OutboxLimit)
		_ = c.nc.Close() // wakes a writer blocked on the socket, ends the reader
	}
	c.signal()
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// kill marks the connection dead after a failed write and closes it.
func (c *conn) kill() {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
	_ = c.nc.Close()
}

// take waits for responses and swaps them out for spare, an emptied
// earlier batch. last reports that nothing more will come: the reader has
// stopped and every order it read has been answered.
func (c *conn) take(spare []response) (batch []response, last, dead bool) {
	for {
		c.mu.Lock()
		finished := c.readDone.Load() && c.owed.Load() == 0
		if len(c.queue) > 0 || finished {
			batch, c.queue = c.queue, spare[:0]
			dead = c.dead
			c.mu.Unlock()
			return batch, finished, dead
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.srv.force:
			c.kill()
			c.mu.Lock()
			batch, c.queue = c.queue, nil
			c.mu.Unlock()
			return batch, true, true
		}
	}
}

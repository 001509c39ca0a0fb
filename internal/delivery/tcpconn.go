package delivery

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Raw TCP framing limits.
const (
	// MaxAckFrame bounds an Ack frame; a larger one breaks the connection.
	MaxAckFrame = 64 << 10
	tcpBuffer   = 64 << 10
)

// errFrameTooLarge and errBadLength break a connection whose peer sends a
// frame that cannot be an Ack.
var (
	errFrameTooLarge = errors.New("delivery: ack frame too large")
	errBadLength     = errors.New("delivery: bad frame length")
)

// tcpConn is one pipelined connection: a writer goroutine sends the
// Delivery frames queued in out, batching whatever has queued into one
// flush; a reader goroutine matches Ack frames to pending attempts.
type tcpConn struct {
	ep *tcpEndpoint
	nc net.Conn

	mu      sync.Mutex
	pending map[uint64]*attempt // awaiting an Ack, by delivery id
	out     []*attempt          // queued for the writer
	spare   []*attempt
	dead    bool

	wake chan struct{} // the writer has work
	quit chan struct{} // closed when the connection fails
}

func newTCPConn(ep *tcpEndpoint, nc net.Conn) *tcpConn {
	return &tcpConn{
		ep: ep, nc: nc, pending: map[uint64]*attempt{},
		wake: make(chan struct{}, 1), quit: make(chan struct{}),
	}
}

// run starts the connection's goroutines, already counted in the
// transport's workers.
func (c *tcpConn) run() {
	go func() {
		defer c.ep.t.workers.Done()
		c.writeLoop()
	}()
	go func() {
		defer c.ep.t.workers.Done()
		c.readLoop()
	}()
}

// enqueue hands a to the writer and records it as awaiting its Ack.
func (c *tcpConn) enqueue(a *attempt) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		go a.finish(fmt.Errorf("%w: %s: connection lost", ErrUnreachable, c.ep.addr))
		return
	}
	c.pending[a.id] = a
	a.conn.Store(c)
	c.out = append(c.out, a)
	first := len(c.out) == 1
	c.mu.Unlock()
	// The attempt may have ended (timed out) before it was recorded;
	// then its end did not see this connection.
	if a.over() {
		c.forget(a)
	}
	if first {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// forget drops an attempt that ended before its Ack.
func (c *tcpConn) forget(a *attempt) {
	c.mu.Lock()
	if c.pending[a.id] == a {
		delete(c.pending, a.id)
	}
	c.mu.Unlock()
}

func (c *tcpConn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, tcpBuffer)
	var m boomerangv1.Delivery
	var frame, size []byte
	for {
		select {
		case <-c.wake:
			// The loops handing attempts over now finish first: theirs
			// go out in the same write, one system call for all of them.
			runtime.Gosched()
		case <-c.quit:
			return
		}
		c.mu.Lock()
		batch := c.out
		c.out, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		err := c.write(bw, &m, batch, &frame, &size)
		clear(batch)
		c.mu.Lock()
		if cap(batch) <= 4096 {
			c.spare = batch[:0]
		}
		c.mu.Unlock()
		m.Payload = nil
		if err != nil {
			c.fail(err)
			return
		}
	}
}

func (c *tcpConn) write(bw *bufio.Writer, m *boomerangv1.Delivery, batch []*attempt, frame, size *[]byte) error {
	if len(batch) == 0 {
		return nil
	}
	now := c.ep.t.e.cfg.Clock.Now()
	// Socket deadlines are wall-clock time by nature. A receiver that
	// stops reading for a whole attempt timeout is dropped.
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.ep.t.e.cfg.DefaultTimeout)); err != nil {
		return err
	}
	written := false
	for _, a := range batch {
		if a.over() {
			continue
		}
		a.message(m, now.UnixMilli())
		var err error
		if *frame, err = (proto.MarshalOptions{}).MarshalAppend((*frame)[:0], m); err != nil {
			// Cannot happen with a valid message; fail just this one.
			go a.finish(permanent(fmt.Errorf("%w: encoding: %w", ErrInvalidCallback, err)))
			continue
		}
		*size = binary.AppendUvarint((*size)[:0], uint64(len(*frame)))
		_, _ = bw.Write(*size)
		if _, err := bw.Write(*frame); err != nil {
			return err
		}
		written = true
	}
	if cap(*frame) > tcpBuffer {
		*frame = nil
	}
	if !written {
		return nil
	}
	return bw.Flush()
}

func (c *tcpConn) readLoop() {
	br := bufio.NewReaderSize(c.nc, MaxAckFrame)
	var ack boomerangv1.Ack
	for {
		body, err := readFrame(br, MaxAckFrame)
		if err != nil {
			c.fail(err)
			return
		}
		err = proto.Unmarshal(body, &ack)
		_, _ = br.Discard(len(body))
		if err != nil {
			c.fail(fmt.Errorf("undecodable ack: %w", err))
			return
		}
		c.mu.Lock()
		a := c.pending[ack.DeliveryId]
		delete(c.pending, ack.DeliveryId)
		c.mu.Unlock()
		if a == nil {
			continue // its attempt timed out
		}
		if ack.Ok {
			a.finish(nil)
		} else {
			a.finish(fmt.Errorf("%w: ack not ok: %s", ErrRejected, safeText(ack.Error)))
		}
	}
}

// readFrame reads one varint-length-delimited frame of at most max bytes,
// which br's buffer must be able to hold. The body aliases br's buffer
// until the caller discards it.
func readFrame(br *bufio.Reader, max int) ([]byte, error) {
	size, err := binary.ReadUvarint(br)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || (err != io.EOF && !isNetErr(err)) {
			return nil, errBadLength
		}
		return nil, err
	}
	if size > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, size, max)
	}
	body, err := br.Peek(int(size))
	if errors.Is(err, io.EOF) {
		return nil, io.ErrUnexpectedEOF
	}
	return body, err
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// fail breaks the connection: every attempt awaiting an Ack on it fails
// with ErrUnreachable (or ErrClosed when the engine closes).
func (c *tcpConn) fail(cause error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead = true
	pending := c.pending
	c.pending, c.out = nil, nil
	c.mu.Unlock()
	c.shutdown()
	err := cause
	if !errors.Is(cause, ErrClosed) {
		err = fmt.Errorf("%w: %s: connection lost: %w", ErrUnreachable, c.ep.addr, cause)
	}
	for _, a := range pending {
		a.finish(err)
	}
}

// closeIdle closes the connection if nothing awaits an Ack on it.
func (c *tcpConn) closeIdle() {
	c.mu.Lock()
	if c.dead || len(c.pending) > 0 || len(c.out) > 0 {
		c.mu.Unlock()
		return
	}
	c.dead = true
	c.mu.Unlock()
	c.shutdown()
}

func (c *tcpConn) shutdown() {
	close(c.quit)
	_ = c.nc.Close()
	c.ep.drop(c)
}

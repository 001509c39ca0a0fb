package client

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Buffer sizes of a connection's reader, and the largest batch buffer its
// writer keeps for reuse.
const (
	readBuffer = 64 << 10
	spareLimit = 1 << 20
)

// errNotSent tells a caller its request never reached a connection that
// has since failed, so it may safely go out on the next one.
var errNotSent = errors.New("client: connection already failed")

// conn is one TCP connection. Callers append encoded frames to out under
// mu; the writer goroutine swaps out for an empty buffer and writes it in
// one go, so under load many requests share a system call. The reader
// goroutine matches responses to waiting calls by request id.
type conn struct {
	nc          net.Conn
	maxResponse int
	lost        func(*conn, error, int) // told once when the connection fails

	wake chan struct{} // capacity 1: "out has frames"
	done chan struct{} // closed when the connection failed

	mu       sync.Mutex
	out      []byte
	pending  map[uint64]*call
	err      error              // why the connection failed; nil while healthy
	farewell *boomerangv1.Error // the server's connection error frame, if any

	loops sync.WaitGroup
}

// call is one request waiting for its response.
type call struct {
	id     uint64
	result chan result // capacity 1, so the reader never blocks
}

type result struct {
	resp *boomerangv1.Response
	err  error
}

func newConn(nc net.Conn, maxResponse int, lost func(*conn, error, int)) *conn {
	c := &conn{
		nc:          nc,
		maxResponse: maxResponse,
		lost:        lost,
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		pending:     make(map[uint64]*call),
	}
	c.loops.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return c
}

// send queues frame and registers cl for its response. It returns
// errNotSent if the connection has already failed.
func (c *conn) send(cl *call, frame []byte) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return errNotSent
	}
	c.pending[cl.id] = cl
	c.out = append(c.out, frame...)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// abandon forgets a call whose caller stopped waiting; a late response
// for it is dropped.
func (c *conn) abandon(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *conn) writeLoop() {
	defer c.loops.Done()
	var spare []byte
	for {
		select {
		case <-c.wake:
			// Callers about to send finish first: their requests go out
			// in the same write, one system call for all of them.
			runtime.Gosched()
		case <-c.done:
			return
		}
		c.mu.Lock()
		batch := c.out
		if len(batch) == 0 {
			c.mu.Unlock()
			continue
		}
		c.out = spare[:0]
		c.mu.Unlock()
		if _, err := c.nc.Write(batch); err != nil {
			c.fail(err)
			return
		}
		spare = batch
		if cap(spare) > spareLimit {
			spare = nil // give back the memory of a burst
		}
	}
}

func (c *conn) readLoop() {
	defer c.loops.Done()
	br := bufio.NewReaderSize(c.nc, readBuffer)
	opts := protodelim.UnmarshalOptions{MaxSize: int64(c.maxResponse)}
	for {
		resp := new(boomerangv1.Response)
		if err := opts.UnmarshalFrom(br, resp); err != nil {
			c.fail(err)
			return
		}
		if resp.GetRequestId() == 0 {
			// A connection error: the server closes the connection next.
			c.mu.Lock()
			c.farewell = resp.GetError()
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		cl := c.pending[resp.GetRequestId()]
		delete(c.pending, resp.GetRequestId())
		c.mu.Unlock()
		if cl != nil {
			cl.result <- result{resp: resp}
		}
	}
}

// fail closes the connection, fails every call waiting on it with
// ErrConnectionLost, and tells the Client. Only the first cause counts.
func (c *conn) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if c.farewell != nil {
		cause = newError(c.farewell)
	}
	c.err = cause
	waiting := c.pending
	c.pending = nil
	c.out = nil
	close(c.done)
	c.mu.Unlock()
	_ = c.nc.Close()
	lostErr := fmt.Errorf("%w: %w", ErrConnectionLost, cause)
	for _, cl := range waiting {
		cl.result <- result{err: lostErr}
	}
	c.lost(c, cause, len(waiting))
}

// failure returns why the connection failed, or nil while it is healthy.
func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// close fails the connection with cause and waits for its goroutines.
func (c *conn) close(cause error) {
	c.fail(cause)
	c.loops.Wait()
}

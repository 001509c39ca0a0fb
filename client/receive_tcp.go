package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// TCPReceiverConfig configures a TCPReceiver.
type TCPReceiverConfig struct {
	// Handler receives each delivery. Required.
	Handler Handler
	// MaxFrame bounds a Delivery frame, in bytes; a larger one closes the
	// connection. Default DefaultMaxDelivery plus 64 KiB for the envelope.
	MaxFrame int
	// MaxInFlight bounds the handlers running at once per connection;
	// beyond it the connection is not read until one ends. Default
	// DefaultReceiverInFlight.
	MaxInFlight int
	// Logger receives one line per connection that ends in error.
	// Default: discard.
	Logger *slog.Logger
}

// TCPReceiver receives deliveries over raw TCP: the server connects to it
// and sends varint-length-delimited Delivery frames, many at a time on one
// connection; the receiver runs the handler for each, concurrently, and
// answers each with an Ack frame carrying its delivery id as soon as the
// handler returns, in whatever order handlers finish. Acks that are ready
// together leave in one write.
//
//	r, _ := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: handle})
//	ln, _ := net.Listen("tcp", ":9000")
//	go r.Serve(ln)
//	defer r.Close(ctx)
type TCPReceiver struct {
	cfg    TCPReceiverConfig
	ctx    context.Context // handlers' context, cancelled when Close gives up
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*tcpReceiverConn]struct{}
	wg        sync.WaitGroup // connections; added to under mu while not closed
}

// NewTCPReceiver checks cfg and builds a receiver.
func NewTCPReceiver(cfg TCPReceiverConfig) (*TCPReceiver, error) {
	switch {
	case cfg.Handler == nil:
		return nil, errors.New("client: TCPReceiverConfig.Handler is required")
	case cfg.MaxFrame < 0 || cfg.MaxInFlight < 0:
		return nil, errors.New("client: TCPReceiverConfig.MaxFrame and MaxInFlight must not be negative")
	}
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = DefaultMaxDelivery + 64<<10
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultReceiverInFlight
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &TCPReceiver{cfg: cfg, listeners: map[net.Listener]struct{}{}, conns: map[*tcpReceiverConn]struct{}{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// Serve accepts connections on ln until Close, then returns
// ErrReceiverClosed; it returns earlier if Accept fails. Serve closes ln
// when it returns.
func (r *TCPReceiver) Serve(ln net.Listener) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = ln.Close()
		return ErrReceiverClosed
	}
	r.listeners[ln] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.listeners, ln)
		r.mu.Unlock()
		_ = ln.Close()
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if r.isClosed() {
				return ErrReceiverClosed
			}
			return err
		}
		r.serveConn(nc)
	}
}

func (r *TCPReceiver) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *TCPReceiver) serveConn(nc net.Conn) {
	c := &tcpReceiverConn{r: r, nc: nc, sem: make(chan struct{}, r.cfg.MaxInFlight), wake: make(chan struct{}, 1), readDone: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(r.ctx)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = nc.Close()
		return
	}
	r.conns[c] = struct{}{}
	r.wg.Add(2)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		c.readLoop()
	}()
	go func() {
		defer r.wg.Done()
		c.writeLoop()
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
	}()
}

// Close stops accepting connections and reading deliveries, waits for the
// handlers under way to return and their acks to be written, and closes
// the connections. Deliveries the server sent that were not read fail on
// its side and are retried. If ctx ends first, handlers' contexts are
// cancelled and connections closed at once; Close still waits for the
// handlers to return. Close returns ctx.Err() in that case.
func (r *TCPReceiver) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	for ln := range r.listeners {
		_ = ln.Close()
	}
	conns := make([]*tcpReceiverConn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		// Wakes the reader; the writer then finishes the acks under way.
		_ = c.nc.SetReadDeadline(time.Now())
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		r.cancel()
		return nil
	case <-ctx.Done():
		r.cancel()
		for _, c := range conns {
			_ = c.nc.Close()
		}
		<-done
		return ctx.Err()
	}
}

// tcpReceiverConn is one connection from the server.
type tcpReceiverConn struct {
	r        *TCPReceiver
	nc       net.Conn
	ctx      context.Context // handlers' context: cancelled when the server hangs up
	cancel   context.CancelFunc
	sem      chan struct{} // a slot per running handler
	handlers sync.WaitGroup

	mu       sync.Mutex
	acks     []*boomerangv1.Ack
	wake     chan struct{}
	readDone chan struct{} // closed when reading has stopped and every handler returned
}

func (c *tcpReceiverConn) readLoop() {
	defer func() {
		c.handlers.Wait()
		c.cancel()
		close(c.readDone)
	}()
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		d, err := readDelivery(br, c.r.cfg.MaxFrame)
		if err != nil {
			ne, isNet := errors.AsType[net.Error](err)
			stopped := c.r.isClosed() && isNet && ne.Timeout() // by Close's read deadline
			if !stopped {
				// The server hung up or the stream broke: nobody will
				// read the acks of the handlers still running.
				c.cancel()
			}
			if !stopped && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				c.r.cfg.Logger.Warn("callback connection closed", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			return
		}
		c.sem <- struct{}{}
		c.handlers.Add(1)
		go c.handle(d)
	}
}

// readDelivery reads one Delivery frame of at most max bytes.
func readDelivery(br *bufio.Reader, max int) (*boomerangv1.Delivery, error) {
	d := &boomerangv1.Delivery{}
	if err := (protodelim.UnmarshalOptions{MaxSize: int64(max)}).UnmarshalFrom(br, d); err != nil {
		return nil, err
	}
	return d, nil
}

func (c *tcpReceiverConn) handle(d *boomerangv1.Delivery) {
	defer func() {
		<-c.sem
		c.handlers.Done()
	}()
	ack := &boomerangv1.Ack{DeliveryId: d.DeliveryId, Ok: true}
	if err := c.r.cfg.Handler(c.ctx, d); err != nil {
		ack.Ok, ack.Error = false, err.Error()
	}
	c.mu.Lock()
	c.acks = append(c.acks, ack)
	first := len(c.acks) == 1
	c.mu.Unlock()
	if first {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// writeLoop writes acks as handlers produce them, until reading has
// stopped and the last ack is out, then closes the connection.
func (c *tcpReceiverConn) writeLoop() {
	defer c.nc.Close()
	bw := bufio.NewWriterSize(c.nc, 16<<10)
	var failed error
	for {
		var last bool
		select {
		case <-c.wake:
			// Handlers running now finish first: their acks go out in
			// the same write, one system call for all of them.
			runtime.Gosched()
		case <-c.readDone:
			last = true
		}
		c.mu.Lock()
		acks := c.acks
		c.acks = nil
		c.mu.Unlock()
		if failed == nil {
			failed = writeAcks(bw, acks)
			if failed != nil {
				_ = c.nc.Close() // stops the reader; handlers still finish
			}
		}
		if last {
			return
		}
	}
}

func writeAcks(bw *bufio.Writer, acks []*boomerangv1.Ack) error {
	if len(acks) == 0 {
		return nil
	}
	for _, a := range acks {
		if _, err := protodelim.MarshalTo(bw, a); err != nil {
			return err
		}
	}
	return bw.Flush()
}

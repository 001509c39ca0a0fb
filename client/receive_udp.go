package client

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// maxDatagram is the largest UDP payload.
const maxDatagram = 65535

// UDPReceiverConfig configures a UDPReceiver.
type UDPReceiverConfig struct {
	// Handler receives each delivery. Required.
	Handler Handler
	// MaxInFlight is the number of goroutines reading the socket, each
	// running the handler for what it read, so at most this many handlers
	// run at once; while all are busy the kernel buffers datagrams, and
	// drops them once its buffer is full. 1 handles datagrams one at a
	// time in arrival order. Default DefaultUDPReaders.
	MaxInFlight int
	// Logger is reserved for lifecycle events. Default: discard.
	Logger *slog.Logger
}

// UDPReceiver receives deliveries over UDP: each datagram is one Delivery
// message. UDP has no acknowledgement, so the server counts a delivery as
// done once it is sent: a datagram lost on the way, dropped because the
// receiver fell behind, or whose handler fails is never retried. Use UDP
// only for deliveries that may be lost; Stats counts what arrived.
//
//	r, _ := client.NewUDPReceiver(client.UDPReceiverConfig{Handler: handle})
//	pc, _ := net.ListenPacket("udp", ":9000")
//	go r.Serve(pc)
//	defer r.Close(ctx)
type UDPReceiver struct {
	cfg    UDPReceiverConfig
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	conns   map[net.PacketConn]struct{}
	serving sync.WaitGroup // Serve calls, with their readers; added to under mu while not closed

	received, undecodable, failed atomic.Uint64
}

// UDPReceiverStats counts what a UDPReceiver has seen.
type UDPReceiverStats struct {
	Received    uint64 // deliveries decoded and handed to the handler
	Undecodable uint64 // datagrams that were not a Delivery
	Failed      uint64 // deliveries whose handler returned an error
}

// NewUDPReceiver checks cfg and builds a receiver.
func NewUDPReceiver(cfg UDPReceiverConfig) (*UDPReceiver, error) {
	switch {
	case cfg.Handler == nil:
		return nil, errors.New("client: UDPReceiverConfig.Handler is required")
	case cfg.MaxInFlight < 0:
		return nil, errors.New("client: UDPReceiverConfig.MaxInFlight must not be negative")
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultUDPReaders
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &UDPReceiver{cfg: cfg, conns: map[net.PacketConn]struct{}{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// Serve reads datagrams from pc until Close, then returns
// ErrReceiverClosed; it returns earlier if reading fails. Serve closes pc
// when it returns.
//
// MaxInFlight goroutines take turns reading the socket, each running the
// handler for the datagram it read before reading again: no hand-off
// between a reader and a handler goroutine.
func (r *UDPReceiver) Serve(pc net.PacketConn) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = pc.Close()
		return ErrReceiverClosed
	}
	r.conns[pc] = struct{}{}
	r.serving.Add(1)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, pc)
		r.mu.Unlock()
		_ = pc.Close()
		r.serving.Done()
	}()
	errs := make(chan error, r.cfg.MaxInFlight)
	var readers sync.WaitGroup
	for range r.cfg.MaxInFlight {
		readers.Go(func() { errs <- r.read(pc) })
	}
	err := <-errs
	_ = pc.Close() // stops the other readers
	readers.Wait()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrReceiverClosed
	}
	return err
}

// read handles datagrams from pc until reading fails.
func (r *UDPReceiver) read(pc net.PacketConn) error {
	buf := make([]byte, maxDatagram)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		d := &boomerangv1.Delivery{}
		if err := proto.Unmarshal(buf[:n], d); err != nil {
			r.undecodable.Add(1)
			continue
		}
		r.received.Add(1)
		if err := r.cfg.Handler(r.ctx, d); err != nil {
			r.failed.Add(1)
		}
	}
}

// Stats returns the receiver's counters.
func (r *UDPReceiver) Stats() UDPReceiverStats {
	return UDPReceiverStats{Received: r.received.Load(), Undecodable: r.undecodable.Load(), Failed: r.failed.Load()}
}

// Close stops reading, closing the sockets Serve was given, and waits for
// the handlers under way. If ctx ends first, their context is cancelled
// and Close still waits for them to return, then returns ctx.Err().
func (r *UDPReceiver) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	for pc := range r.conns {
		_ = pc.Close()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.serving.Wait()
		close(done)
	}()
	select {
	case <-done:
		r.cancel()
		return nil
	case <-ctx.Done():
		r.cancel()
		<-done
		return ctx.Err()
	}
}

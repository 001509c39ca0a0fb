package replica

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/replica/replicapb"
)

// stream is the outgoing stream to one peer: a bounded queue that Send
// fills and one goroutine that dials the peer, shakes hands, then writes
// whatever is queued in one write at a time, redialing with backoff when
// the stream breaks.
type stream struct {
	t     *TCPTransport
	id    uint64
	addr  string
	stats *peerCounters

	ctx    context.Context // canceled by close, which ends the connection
	cancel context.CancelFunc

	mu     sync.Mutex
	up     bool // the handshake succeeded: messages are queued
	queue  []Envelope
	queued int // bytes of queue, as marshaled
	wake   chan struct{}

	buf bytes.Buffer // the batch being written; used by run alone
}

func newStream(t *TCPTransport, id uint64, addr string, stats *peerCounters) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	return &stream{t: t, id: id, addr: addr, stats: stats, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
}

// enqueue queues a message of size bytes, unless the stream is down or
// its queue full.
func (s *stream) enqueue(e Envelope, size int) bool {
	s.mu.Lock()
	ok := s.up && (s.queued == 0 || s.queued+size <= s.t.cfg.QueueBytes)
	if ok {
		s.queue = append(s.queue, e)
		s.queued += size
	}
	s.mu.Unlock()
	if ok {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return ok
}

func (s *stream) state() (up bool, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up, s.queued
}

// close stops the stream; run returns soon after.
func (s *stream) close() { s.cancel() }

// run dials the peer and serves each connection until the stream is
// closed.
func (s *stream) run() {
	log := s.t.cfg.Logger.With("peer", s.id, "addr", s.addr)
	failures, lastErr := 0, ""
	for {
		wasUp, err := s.connection(log)
		if s.ctx.Err() != nil {
			return
		}
		if wasUp {
			failures, lastErr = 0, ""
		}
		// A failure like the last one is no news: keep the log quiet
		// while a peer stays down.
		if msg := err.Error(); msg != lastErr {
			log.Warn("replication stream down", "err", err)
			lastErr = msg
		} else {
			log.Debug("replication stream still down", "err", err)
		}
		if !s.backoff(failures) {
			return
		}
		failures++
	}
}

// connection dials the peer, shakes hands and serves the connection until
// it breaks or the stream is closed. It reports whether the handshake
// succeeded.
func (s *stream) connection(log *slog.Logger) (bool, error) {
	cfg := s.t.cfg
	dialer := &net.Dialer{Timeout: cfg.DialTimeout}
	var conn net.Conn
	var err error
	if cfg.TLS != nil {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: cfg.TLS}).DialContext(s.ctx, "tcp", s.addr)
	} else {
		conn, err = dialer.DialContext(s.ctx, "tcp", s.addr)
	}
	if err != nil {
		return false, err
	}
	defer conn.Close()
	// Closing the stream closes the connection, which ends a handshake
	// or a write in progress.
	defer context.AfterFunc(s.ctx, func() { _ = conn.Close() })()
	if err := s.handshake(conn); err != nil {
		return false, err
	}
	log.Info("replication stream up")
	return true, s.serve(conn)
}

// backoff waits before the next dial: twice as long after each failure,
// from MinBackoff up to MaxBackoff, half of it random so that peers do not
// redial in step. It reports false if the stream was closed meanwhile.
func (s *stream) backoff(failures int) bool {
	d := s.t.cfg.MaxBackoff
	if failures < 30 {
		d = min(d, s.t.cfg.MinBackoff<<failures)
	}
	d = d/2 + rand.N(d/2+1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// handshake says which cluster and nodes the stream means; the peer
// accepts or refuses.
func (s *stream) handshake(conn net.Conn) error {
	cfg := s.t.cfg
	_ = conn.SetDeadline(time.Now().Add(cfg.DialTimeout))
	hello := &replicapb.Hello{Version: tcpVersion, Cluster: cfg.Cluster, From: cfg.ID, To: s.id}
	if _, err := protodelim.MarshalTo(conn, hello); err != nil {
		return err
	}
	var reply replicapb.HelloReply
	if err := (protodelim.UnmarshalOptions{MaxSize: maxHelloSize}).UnmarshalFrom(bufio.NewReader(conn), &reply); err != nil {
		return fmt.Errorf("no answer to the handshake: %w", err)
	}
	if reply.GetRefused() != "" {
		return fmt.Errorf("refused by the peer: %s", reply.GetRefused())
	}
	return conn.SetDeadline(time.Time{})
}

// serve writes what is queued to conn until conn breaks or the stream is
// closed. The peer never writes after the handshake: a read that returns
// means that it closed the stream.
func (s *stream) serve(conn net.Conn) error {
	s.mu.Lock()
	s.up = true
	s.mu.Unlock()
	peerClosed := make(chan struct{})
	s.t.wg.Go(func() {
		_, _ = io.Copy(io.Discard, conn)
		close(peerClosed)
	})
	err := s.pump(conn, peerClosed)
	_ = conn.Close() // ends the reader
	s.mu.Lock()
	s.up = false
	lost := s.queue
	s.queue, s.queued = nil, 0
	s.mu.Unlock()
	s.drop(lost)
	return err
}

// pump writes each batch of queued messages in one write.
func (s *stream) pump(conn net.Conn, peerClosed <-chan struct{}) error {
	for {
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-peerClosed:
			return errors.New("closed by the peer")
		case <-s.wake:
		}
		s.mu.Lock()
		batch := s.queue
		s.queue, s.queued = nil, 0
		s.mu.Unlock()
		if batch = s.encode(batch); len(batch) == 0 {
			continue // a stale wake, or nothing that fits a frame
		}
		_ = conn.SetWriteDeadline(time.Now().Add(s.t.cfg.WriteTimeout))
		if _, err := conn.Write(s.buf.Bytes()); err != nil {
			s.drop(batch)
			return err
		}
		s.stats.sent.Add(uint64(len(batch)))
		s.stats.sentBytes.Add(uint64(s.buf.Len()))
		if s.buf.Cap() > 1<<20 {
			s.buf = bytes.Buffer{} // let a big batch's memory go
		}
	}
}

// encode frames the batch into s.buf and returns what it framed: a
// message too big for a frame is dropped.
func (s *stream) encode(batch []Envelope) []Envelope {
	s.buf.Reset()
	framed := batch[:0]
	for _, e := range batch {
		msg, err := proto.Marshal(e.Msg)
		f := &replicapb.Frame{Shard: uint32(e.Shard), Message: msg, ToAdded: e.ToAdded, FromAdded: e.FromAdded}
		size := proto.Size(f)
		if err == nil && size > s.t.cfg.MaxFrameSize {
			err = fmt.Errorf("%d bytes, over the %d-byte frame limit", size, s.t.cfg.MaxFrameSize)
		}
		if err == nil {
			_, err = protodelim.MarshalTo(&s.buf, f) // a bytes.Buffer: fails only with its memory
		}
		if err != nil {
			s.stats.dropped.Add(1)
			s.t.cfg.Logger.Warn("dropped a message that cannot be sent", "peer", s.id, "shard", e.Shard,
				"type", e.Msg.GetType().String(), "err", err)
			continue
		}
		framed = append(framed, e)
	}
	return framed
}

// drop counts messages lost with the stream and tells the node.
func (s *stream) drop(lost []Envelope) {
	if len(lost) == 0 {
		return
	}
	s.stats.dropped.Add(uint64(len(lost)))
	shards := make(map[uint16]bool)
	for _, e := range lost {
		shards[e.Shard] = true
	}
	for shard := range shards {
		s.t.recv.Unreachable(shard, s.id)
	}
}

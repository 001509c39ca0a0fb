package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/replica/replicapb"
)

const (
	// maxHelloSize bounds a handshake message: a few ids and a name.
	maxHelloSize = 4 << 10
	// maxReceiveBatch bounds the messages handed to the node at once.
	maxReceiveBatch = 1024
)

// accept takes the peers' streams until the listener is closed.
func (t *TCPTransport) accept() {
	for failures := 0; ; {
		conn, err := t.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: wait rather than spin.
			t.cfg.Logger.Error("cluster listener failed to accept", "err", err)
			failures++
			time.Sleep(min(time.Second, 5*time.Millisecond<<min(failures, 8)))
			continue
		}
		failures = 0
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			_ = conn.Close()
			return
		}
		t.inbound[conn] = 0
		t.mu.Unlock()
		t.wg.Go(func() { t.serveInbound(conn) })
	}
}

// serveInbound shakes hands with a peer that dialed, then hands the
// messages it sends to the node.
func (t *TCPTransport) serveInbound(conn net.Conn) {
	defer t.forget(conn)
	log := t.cfg.Logger.With("remote", conn.RemoteAddr().String())
	_ = conn.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	counted := &countingReader{r: conn}
	br := bufio.NewReaderSize(counted, 64<<10)
	var hello replicapb.Hello
	if err := (protodelim.UnmarshalOptions{MaxSize: maxHelloSize}).UnmarshalFrom(br, &hello); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			level = slog.LevelDebug // a probe of the port, or this node closing
		}
		log.Log(context.Background(), level, "refused a replication stream: no handshake", "err", err)
		return
	}
	refused := t.check(&hello)
	reply := &replicapb.HelloReply{Version: tcpVersion, Refused: refused}
	if _, err := protodelim.MarshalTo(conn, reply); err != nil || refused != "" {
		if refused != "" {
			log.Warn("refused a replication stream", "reason", refused, "from", hello.GetFrom())
		}
		return
	}
	_ = conn.SetDeadline(time.Time{})
	counted.n = uint64(br.Buffered()) // count frames only, as the sender does
	from := hello.GetFrom()
	stats := t.accepted(conn, from)
	log = log.With("peer", from)
	log.Debug("replication stream accepted")
	err := t.read(br, counted, from, stats)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		log.Debug("replication stream closed")
	default:
		log.Warn("replication stream from peer broken", "err", err)
	}
}

// check returns why a stream is refused, or "".
func (t *TCPTransport) check(h *replicapb.Hello) string {
	switch {
	case h.GetVersion() != tcpVersion:
		return fmt.Sprintf("transport version %d, this node speaks version %d", h.GetVersion(), tcpVersion)
	case h.GetCluster() != t.cfg.Cluster:
		return fmt.Sprintf("the stream is for cluster %q, this node belongs to cluster %q", h.GetCluster(), t.cfg.Cluster)
	case h.GetTo() != t.cfg.ID:
		return fmt.Sprintf("the stream is for node %d, this is node %d", h.GetTo(), t.cfg.ID)
	case h.GetFrom() == 0 || h.GetFrom() == t.cfg.ID:
		return fmt.Sprintf("the stream claims to come from node %d", h.GetFrom())
	}
	return ""
}

// accepted records conn as the stream of peer from, closing the one it
// replaces: a peer that redials has given up on its old stream.
func (t *TCPTransport) accepted(conn net.Conn, from uint64) *peerCounters {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.latest[from]; old != nil {
		_ = old.Close()
	}
	t.inbound[conn] = from
	t.latest[from] = conn
	return t.counters(from)
}

// forget closes an accepted stream and lets it go.
func (t *TCPTransport) forget(conn net.Conn) {
	_ = conn.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	from := t.inbound[conn]
	delete(t.inbound, conn)
	if t.latest[from] == conn {
		delete(t.latest, from)
	}
}

// read hands the messages of an accepted stream to the node, as many at a
// time as have arrived, until the stream ends.
func (t *TCPTransport) read(br *bufio.Reader, counted *countingReader, from uint64, stats *peerCounters) error {
	opts := protodelim.UnmarshalOptions{MaxSize: int64(t.cfg.MaxFrameSize)}
	var batch []Envelope
	defer func() {
		if len(batch) > 0 {
			t.recv.Receive(batch)
		}
	}()
	for {
		e, err := t.readFrame(br, opts, from)
		if tooBig := (*protodelim.SizeTooLargeError)(nil); errors.As(err, &tooBig) {
			t.cfg.Logger.Warn("dropped a message too big for a frame", "peer", from,
				"size", tooBig.Size, "max_frame_size", t.cfg.MaxFrameSize)
			if _, err := br.Discard(int(min(tooBig.Size, math.MaxInt))); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		batch = append(batch, e)
		stats.received.Add(1)
		stats.receivedBytes.Add(counted.n)
		counted.n = 0
		if br.Buffered() == 0 || len(batch) == maxReceiveBatch {
			t.recv.Receive(batch)
			batch = nil
		}
	}
}

// readFrame reads one message, checking that it comes from the stream's
// peer and is for this node.
func (t *TCPTransport) readFrame(br *bufio.Reader, opts protodelim.UnmarshalOptions, from uint64) (Envelope, error) {
	var f replicapb.Frame
	if err := opts.UnmarshalFrom(br, &f); err != nil {
		return Envelope{}, err
	}
	if f.GetShard() > math.MaxUint16 {
		return Envelope{}, fmt.Errorf("shard %d out of range", f.GetShard())
	}
	m := new(raftpb.Message)
	if err := proto.Unmarshal(f.GetMessage(), m); err != nil {
		return Envelope{}, fmt.Errorf("malformed message: %w", err)
	}
	if m.GetFrom() != from || m.GetTo() != t.cfg.ID {
		return Envelope{}, fmt.Errorf("a message from node %d to node %d on the stream from node %d", m.GetFrom(), m.GetTo(), from)
	}
	return Envelope{Shard: uint16(f.GetShard()), Msg: m, ToAdded: f.GetToAdded(), FromAdded: f.GetFromAdded()}, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += uint64(n)
	return n, err
}

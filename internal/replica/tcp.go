package replica

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
)

// Defaults for TCPConfig fields left at zero.
const (
	DefaultMaxFrameSize = 64 << 20
	DefaultQueueBytes   = 16 << 20
	DefaultDialTimeout  = 5 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultMinBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff   = 2 * time.Second
)

// tcpVersion is the version of the transport's wire format, sent in the
// handshake; a node refuses a stream of another version. Version 2: frames
// carry the configuration indexes of the replicas' copies.
const tcpVersion = 2

// ErrTransportClosed: the transport was closed.
var ErrTransportClosed = errors.New("replica: transport closed")

// Receiver is what a transport hands what it receives to, and tells of the
// peers it cannot reach: a Node.
type Receiver interface {
	Receive(envs []Envelope)
	Unreachable(shard uint16, peer uint64)
}

var _ Receiver = (*Node)(nil)

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	// ID is this node's id. Required.
	ID uint64
	// Cluster names the cluster: a stream from a node that names another
	// is refused. Required.
	Cluster string
	// Addr is the cluster address the node listens on for its peers'
	// streams; port 0 picks one (see TCPTransport.Addr). Required.
	Addr string
	// Peers maps the other nodes' ids to their cluster addresses;
	// SetPeers changes them at runtime. This node's own id is ignored.
	Peers map[uint64]string
	// TLS, when set, secures both the listener and the streams this node
	// dials, with the same configuration: mutual TLS when it requires
	// and verifies client certificates (ClientAuth, ClientCAs) and holds
	// this node's certificate and the peers' roots (Certificates,
	// RootCAs). Default: plain TCP.
	TLS *tls.Config
	// MaxFrameSize bounds one message on the wire, a snapshot included.
	// A larger one is dropped, sent or received, with a log line.
	// Default 64 MiB.
	MaxFrameSize int
	// QueueBytes bounds the messages waiting for one peer's stream;
	// beyond it new ones are dropped. One message is always let into an
	// empty queue, so a single message may exceed it up to MaxFrameSize.
	// Default 16 MiB.
	QueueBytes int
	// DialTimeout bounds connecting to a peer, TLS and the handshake
	// included, on either side. Default 5 s.
	DialTimeout time.Duration
	// WriteTimeout bounds one write of queued messages to a peer; a peer
	// that takes longer is taken for stuck and its stream redialed.
	// Raise it for slow links that carry big snapshots. Default 10 s.
	WriteTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before redialing a peer,
	// which doubles with each failure, with jitter. Defaults 100 ms and
	// 2 s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives streams lost and refused, and dropped messages.
	// Default: discard.
	Logger *slog.Logger
}

func (c *TCPConfig) ensureDefaults() {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *TCPConfig) validate() error {
	switch {
	case c.ID == 0:
		return errors.New("replica: TCPConfig.ID must be above 0")
	case c.Cluster == "":
		return errors.New("replica: TCPConfig.Cluster is required")
	case c.Addr == "":
		return errors.New("replica: TCPConfig.Addr is required")
	case c.MaxFrameSize < 0 || c.QueueBytes < 0 || c.DialTimeout < 0 || c.WriteTimeout < 0 || c.MinBackoff < 0:
		return errors.New("replica: TCPConfig sizes and durations must not be negative")
	case c.MinBackoff > c.MaxBackoff:
		return errors.New("replica: TCPConfig.MinBackoff must not exceed MaxBackoff")
	}
	return nil
}

// TCPTransport carries a node's Raft messages to its peers over TCP,
// optionally TLS: one outgoing stream per peer, and a listener that
// accepts the peers' streams and hands what they carry to the node. See
// the package documentation, "The TCP transport".
type TCPTransport struct {
	cfg TCPConfig
	ln  net.Listener

	mu      sync.RWMutex
	recv    Receiver // nil until Start
	addrs   map[uint64]string
	streams map[uint64]*stream // outgoing, one per peer, once started
	inbound map[net.Conn]uint64
	latest  map[uint64]net.Conn // the newest accepted stream of each peer
	stats   map[uint64]*peerCounters
	closed  bool

	wg sync.WaitGroup
}

// peerCounters count one peer's traffic, both ways.
type peerCounters struct {
	sent, sentBytes, received, receivedBytes, dropped atomic.Uint64
}

// PeerStats is one peer's traffic since the transport started.
type PeerStats struct {
	Connected     bool   // the outgoing stream is up
	Sent          uint64 // messages written to the peer
	SentBytes     uint64 // bytes written to it, framing included
	Received      uint64 // messages received from it
	ReceivedBytes uint64 // bytes received from it
	Dropped       uint64 // messages to it dropped: no stream, queue full, too big, or lost with a broken stream
	QueuedBytes   int    // bytes waiting for its stream now
}

// NewTCPTransport checks cfg and listens on its address. Start begins
// accepting and sending.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	t := &TCPTransport{
		cfg:     cfg,
		ln:      ln,
		streams: make(map[uint64]*stream),
		inbound: make(map[net.Conn]uint64),
		latest:  make(map[uint64]net.Conn),
		stats:   make(map[uint64]*peerCounters),
	}
	t.addrs = t.others(cfg.Peers)
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *TCPTransport) Addr() net.Addr { return t.ln.Addr() }

// Start accepts the peers' streams, handing what they carry to recv
// (the node), and dials the peers.
func (t *TCPTransport) Start(recv Receiver) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrTransportClosed
	}
	if t.recv != nil {
		return errors.New("replica: transport already started")
	}
	t.recv = recv
	for id, addr := range t.addrs {
		t.dial(id, addr)
	}
	t.wg.Go(t.accept)
	return nil
}

// SetPeers replaces the peers' addresses: streams to peers no longer
// listed, or at a new address, are closed, and new ones dialed.
func (t *TCPTransport) SetPeers(peers map[uint64]string) {
	next := t.others(peers)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for id, s := range t.streams {
		if next[id] != s.addr {
			s.close()
			delete(t.streams, id)
		}
	}
	t.addrs = next
	if t.recv == nil {
		return // Start dials them
	}
	for id, addr := range next {
		if t.streams[id] == nil {
			t.dial(id, addr)
		}
	}
}

// others copies peers without this node.
func (t *TCPTransport) others(peers map[uint64]string) map[uint64]string {
	out := maps.Clone(peers)
	if out == nil {
		out = map[uint64]string{}
	}
	delete(out, t.cfg.ID)
	return out
}

// dial starts the stream to a peer. t.mu is held.
func (t *TCPTransport) dial(id uint64, addr string) {
	s := newStream(t, id, addr, t.counters(id))
	t.streams[id] = s
	t.wg.Go(s.run)
}

// counters returns a peer's counters, which outlive its streams. t.mu is
// held.
func (t *TCPTransport) counters(id uint64) *peerCounters {
	c := t.stats[id]
	if c == nil {
		c = new(peerCounters)
		t.stats[id] = c
	}
	return c
}

// Send implements Transport: it queues each message on its peer's
// stream, or drops it when the stream is down or its queue full, telling
// the node which peers it could not reach.
func (t *TCPTransport) Send(_ uint64, envs []Envelope) {
	var lost map[lostPeer]bool
	t.mu.RLock()
	recv := t.recv
	for _, e := range envs {
		to := e.Msg.GetTo()
		s := t.streams[to]
		if s != nil && s.enqueue(e, proto.Size(e.Msg)) {
			continue
		}
		if c := t.stats[to]; c != nil {
			c.dropped.Add(1)
		}
		if lost == nil {
			lost = make(map[lostPeer]bool)
		}
		lost[lostPeer{shard: e.Shard, peer: to}] = true
	}
	t.mu.RUnlock()
	if recv != nil {
		for l := range lost {
			recv.Unreachable(l.shard, l.peer)
		}
	}
}

// Stats returns each peer's traffic.
func (t *TCPTransport) Stats() map[uint64]PeerStats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[uint64]PeerStats, len(t.stats))
	for id, c := range t.stats {
		ps := PeerStats{
			Sent: c.sent.Load(), SentBytes: c.sentBytes.Load(),
			Received: c.received.Load(), ReceivedBytes: c.receivedBytes.Load(),
			Dropped: c.dropped.Load(),
		}
		if s := t.streams[id]; s != nil {
			ps.Connected, ps.QueuedBytes = s.state()
		}
		out[id] = ps
	}
	return out
}

// Close stops the listener and every stream, and waits for them.
// Messages still queued are dropped.
func (t *TCPTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.wg.Wait()
		return nil
	}
	t.closed = true
	err := t.ln.Close()
	for _, s := range t.streams {
		s.close()
	}
	for c := range t.inbound {
		_ = c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

var _ Transport = (*TCPTransport)(nil)

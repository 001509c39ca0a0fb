package replica

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/replica/replicapb"
)

// testLogger logs warnings and errors into the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// inbox is a Receiver that keeps what it is given.
type inbox struct {
	mu          sync.Mutex
	envs        []Envelope
	unreachable map[uint64]bool
	changed     chan struct{}
}

func newInbox() *inbox {
	return &inbox{unreachable: map[uint64]bool{}, changed: make(chan struct{}, 1)}
}

func (in *inbox) Receive(envs []Envelope) {
	in.mu.Lock()
	in.envs = append(in.envs, envs...)
	in.mu.Unlock()
	in.signal()
}

func (in *inbox) Unreachable(_ uint16, peer uint64) {
	in.mu.Lock()
	in.unreachable[peer] = true
	in.mu.Unlock()
	in.signal()
}

func (in *inbox) signal() {
	select {
	case in.changed <- struct{}{}:
	default:
	}
}

func (in *inbox) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.envs)
}

// await waits until cond holds, reading the inbox under its lock.
func (in *inbox) await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		in.mu.Lock()
		ok := cond()
		in.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-in.changed:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// startTransport starts a transport on a loopback port, delivering to a
// new inbox, closed when the test ends.
func startTransport(t *testing.T, cfg TCPConfig) (*TCPTransport, *inbox) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Cluster == "" {
		cfg.Cluster = "test"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	tr, err := NewTCPTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in := newInbox()
	if err := tr.Start(in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr, in
}

// message returns a message between two nodes carrying size bytes.
func message(from, to uint64, index uint64, size int) Envelope {
	return Envelope{Shard: uint16(index % 8), Msg: &raftpb.Message{
		Type: raftpb.MessageType_MsgApp.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Index: proto.Uint64(index),
		Entries: []*raftpb.Entry{{Index: proto.Uint64(index + 1), Term: proto.Uint64(1), Data: bytes.Repeat([]byte{'x'}, size)}},
	}}
}

func connected(tr *TCPTransport, peers ...uint64) func() bool {
	return func() bool {
		stats := tr.Stats()
		for _, p := range peers {
			if !stats[p].Connected {
				return false
			}
		}
		return true
	}
}

// Messages arrive in order, with their shards, and are counted both ways.
func TestTCPDeliversInOrder(t *testing.T) {
	b, bIn := startTransport(t, TCPConfig{ID: 2})
	a, _ := startTransport(t, TCPConfig{ID: 1, Peers: map[uint64]string{2: b.Addr().String()}})
	waitFor(t, "the stream to node 2", connected(a, 2))
	const n = 500
	for i := range n {
		a.Send(1, []Envelope{message(1, 2, uint64(i), i)})
	}
	bIn.await(t, "every message", func() bool { return len(bIn.envs) == n })
	for i, e := range bIn.envs {
		if e.Msg.GetIndex() != uint64(i) || e.Shard != uint16(i%8) || len(e.Msg.Entries[0].Data) != i || e.Msg.GetFrom() != 1 {
			t.Fatalf("message %d arrived as %d of shard %d from %d", i, e.Msg.GetIndex(), e.Shard, e.Msg.GetFrom())
		}
	}
	// The sender counts once its write returns, maybe after delivery.
	waitFor(t, "the sender to count every message", func() bool { return a.Stats()[2].Sent == n })
	sent, got := a.Stats()[2], b.Stats()[1]
	if got.Received != n || sent.Dropped != 0 || sent.SentBytes == 0 || got.ReceivedBytes != sent.SentBytes {
		t.Fatalf("node 1 counts %+v for node 2, node 2 counts %+v for node 1", sent, got)
	}
}

// A peer that accepts the stream but never reads fills its queue, whose
// excess is dropped and counted, while another peer gets every message:
// the stuck one holds up nothing and its queue stays within its bound.
func TestTCPStuckPeerHoldsUpNoOne(t *testing.T) {
	stuck := stuckPeer(t, 3)
	b, bIn := startTransport(t, TCPConfig{ID: 2})
	const queueBytes = 256 << 10
	a, aIn := startTransport(t, TCPConfig{ID: 1, QueueBytes: queueBytes,
		Peers: map[uint64]string{2: b.Addr().String(), 3: stuck}})
	waitFor(t, "both streams", connected(a, 2, 3))

	const n, size = 1000, 32 << 10 // 32 MiB each, more than loopback buffers hold
	maxQueued := 0
	for i := range n {
		a.Send(1, []Envelope{message(1, 2, uint64(i), size), message(1, 3, uint64(i), size)})
		bIn.await(t, "node 2 to get the message", func() bool { return len(bIn.envs) == i+1 })
		maxQueued = max(maxQueued, a.Stats()[3].QueuedBytes)
	}
	waitFor(t, "the sender to count every message", func() bool { return a.Stats()[2].Sent == n })
	stats := a.Stats()
	if stats[2].Dropped != 0 {
		t.Fatalf("node 2: %+v, want all %d sent", stats[2], n)
	}
	if stats[3].Dropped == 0 {
		t.Fatalf("node 3 never reads, yet nothing to it was dropped: %+v", stats[3])
	}
	if maxQueued > queueBytes {
		t.Fatalf("the queue to node 3 held %d bytes, over its bound of %d", maxQueued, queueBytes)
	}
	aIn.await(t, "node 3 reported unreachable", func() bool { return aIn.unreachable[3] && !aIn.unreachable[2] })
}

// stuckPeer listens as node id: it accepts streams and their handshake,
// then never reads. It stops when the test ends.
func stuckPeer(t *testing.T, id uint64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			var hello replicapb.Hello
			if protodelim.UnmarshalFrom(bufio.NewReader(conn), &hello) == nil && hello.GetTo() == id {
				_, _ = protodelim.MarshalTo(conn, &replicapb.HelloReply{Version: tcpVersion})
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// A stream from another cluster, to another node, or with a certificate
// the node does not trust is refused, with a log line on both sides that
// says why, and carries nothing.
func TestTCPRefusesStrangers(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	cases := []struct {
		name                 string
		cluster              string
		dialTLS, listenTLS   *tls.Config
		to                   uint64 // the id the peer has
		acceptorLog, dialLog []string
	}{
		{name: "other cluster", cluster: "green", to: 2,
			acceptorLog: []string{"refused a replication stream", `cluster \"green\", this node belongs to cluster \"blue\"`},
			dialLog:     []string{"replication stream down", "refused by the peer"}},
		{name: "other node", cluster: "blue", to: 3,
			acceptorLog: []string{"refused a replication stream", "for node 2, this is node 3"},
			dialLog:     []string{"replication stream down", "refused by the peer"}},
		{name: "untrusted server certificate", cluster: "blue", to: 2, dialTLS: other.config(t), listenTLS: ca.config(t),
			acceptorLog: []string{"refused a replication stream: no handshake", "certificate"},
			dialLog:     []string{"replication stream down", "certificate signed by unknown authority"}},
		{name: "untrusted client certificate", cluster: "blue", to: 2, dialTLS: trusting(other.config(t), ca), listenTLS: ca.config(t),
			acceptorLog: []string{"refused a replication stream: no handshake", "certificate signed by unknown authority"},
			dialLog:     []string{"replication stream down", "certificate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acceptorLog, dialLog := &logLines{}, &logLines{}
			b, bIn := startTransport(t, TCPConfig{ID: tc.to, Cluster: "blue", TLS: tc.listenTLS, Logger: slog.New(slog.NewTextHandler(acceptorLog, nil))})
			a, _ := startTransport(t, TCPConfig{ID: 1, Cluster: tc.cluster, TLS: tc.dialTLS, Logger: slog.New(slog.NewTextHandler(dialLog, nil)),
				Peers: map[uint64]string{2: b.Addr().String()}})
			waitFor(t, "the refusal in the acceptor's log", func() bool { return acceptorLog.has(tc.acceptorLog...) })
			waitFor(t, "the refusal in the dialer's log", func() bool { return dialLog.has(tc.dialLog...) })
			a.Send(1, []Envelope{message(1, 2, 0, 10)})
			if s := a.Stats()[2]; s.Connected || s.Dropped != 1 {
				t.Fatalf("a refused stream counts %+v", s)
			}
			if n := bIn.count(); n != 0 {
				t.Fatalf("a refused stream delivered %d messages", n)
			}
		})
	}
}

// trusting makes cfg trust servers whose certificates ca issued.
func trusting(cfg *tls.Config, ca *testCA) *tls.Config {
	cfg.RootCAs = ca.pool
	return cfg
}

// A node refuses a handshake of another version, and closes a stream that
// carries a message from another node than it said.
func TestTCPRefusesOtherVersionsAndForgedMessages(t *testing.T) {
	b, bIn := startTransport(t, TCPConfig{ID: 2})
	dial := func(hello *replicapb.Hello) (net.Conn, *bufio.Reader, *replicapb.HelloReply) {
		conn, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if _, err := protodelim.MarshalTo(conn, hello); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		var reply replicapb.HelloReply
		if err := protodelim.UnmarshalFrom(br, &reply); err != nil {
			t.Fatal(err)
		}
		return conn, br, &reply
	}

	_, _, reply := dial(&replicapb.Hello{Version: tcpVersion + 1, Cluster: "test", From: 1, To: 2})
	if want := fmt.Sprintf("transport version %d, this node speaks version %d", tcpVersion+1, tcpVersion); reply.GetRefused() != want {
		t.Fatalf("a handshake of another version was answered %q, want %q", reply.GetRefused(), want)
	}

	conn, br, reply := dial(&replicapb.Hello{Version: tcpVersion, Cluster: "test", From: 1, To: 2})
	if reply.GetRefused() != "" {
		t.Fatalf("refused: %s", reply.GetRefused())
	}
	forged := message(3, 2, 0, 10)
	msg, err := proto.Marshal(forged.Msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protodelim.MarshalTo(conn, &replicapb.Frame{Shard: 1, Message: msg}); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the node wrote on a stream that only it reads")
	}
	if n := bIn.count(); n != 0 {
		t.Fatalf("a forged message was delivered")
	}
}

// A message too big for a frame is dropped and logged, by the sender when
// its limit is passed, by the receiver when its own is; the stream goes on.
func TestTCPDropsMessagesTooBigForAFrame(t *testing.T) {
	cases := []struct {
		name             string
		sendMax, recvMax int
		senderLogs       bool
	}{
		{name: "sender's limit", sendMax: 4 << 10, recvMax: 1 << 20, senderLogs: true},
		{name: "receiver's limit", sendMax: 1 << 20, recvMax: 4 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sendLog, recvLog := &logLines{}, &logLines{}
			b, bIn := startTransport(t, TCPConfig{ID: 2, MaxFrameSize: tc.recvMax, Logger: slog.New(slog.NewTextHandler(recvLog, nil))})
			a, _ := startTransport(t, TCPConfig{ID: 1, MaxFrameSize: tc.sendMax, Logger: slog.New(slog.NewTextHandler(sendLog, nil)),
				Peers: map[uint64]string{2: b.Addr().String()}})
			waitFor(t, "the stream", connected(a, 2))
			a.Send(1, []Envelope{message(1, 2, 0, 10), message(1, 2, 1, 8<<10), message(1, 2, 2, 10)})
			bIn.await(t, "the small messages", func() bool { return len(bIn.envs) == 2 })
			if got := []uint64{bIn.envs[0].Msg.GetIndex(), bIn.envs[1].Msg.GetIndex()}; !slices.Equal(got, []uint64{0, 2}) {
				t.Fatalf("got messages %v, want 0 and 2", got)
			}
			logs, what := recvLog, "dropped a message too big for a frame"
			if tc.senderLogs {
				logs, what = sendLog, "dropped a message that cannot be sent"
			}
			if !logs.has(what) {
				t.Fatalf("no log line %q", what)
			}
			if s := a.Stats()[2]; tc.senderLogs && s.Dropped != 1 {
				t.Fatalf("the sender counts %+v", s)
			}
		})
	}
}

// A peer that moves is reached at its new address once SetPeers says so.
func TestTCPFollowsAPeerThatMoves(t *testing.T) {
	b, _ := startTransport(t, TCPConfig{ID: 2})
	a, _ := startTransport(t, TCPConfig{ID: 1, Peers: map[uint64]string{2: b.Addr().String()}})
	waitFor(t, "the stream", connected(a, 2))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	moved, movedIn := startTransport(t, TCPConfig{ID: 2})
	a.SetPeers(map[uint64]string{1: a.Addr().String(), 2: moved.Addr().String()})
	waitFor(t, "the stream to the new address", connected(a, 2))
	a.Send(1, []Envelope{message(1, 2, 7, 10)})
	movedIn.await(t, "the message", func() bool { return len(movedIn.envs) == 1 })
	a.SetPeers(nil)
	if _, ok := a.Stats()[2]; !ok {
		t.Fatal("a peer's counts went with it")
	}
	if a.Stats()[2].Connected {
		t.Fatal("a stream to a peer no longer listed is up")
	}
}

// Whatever arrives on an accepted stream, the reader returns an error or
// hands well-formed messages to the node; it never panics.
func FuzzTCPRead(f *testing.F) {
	var good bytes.Buffer
	msg, err := proto.Marshal(message(1, 2, 3, 20).Msg)
	if err != nil {
		f.Fatal(err)
	}
	_, _ = protodelim.MarshalTo(&good, &replicapb.Frame{Shard: 3, Message: msg})
	f.Add(good.Bytes())
	f.Add(append(good.Bytes(), 0xff, 0xff, 0xff, 0x7f))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := newInbox()
		tr := &TCPTransport{cfg: TCPConfig{ID: 2, MaxFrameSize: 1 << 10, Logger: slog.New(slog.DiscardHandler)}, recv: in}
		counted := &countingReader{r: bytes.NewReader(data)}
		if err := tr.read(bufio.NewReader(counted), counted, 1, new(peerCounters)); err == nil {
			t.Fatal("read ended without an error")
		}
		for _, e := range in.envs {
			if e.Msg.GetFrom() != 1 || e.Msg.GetTo() != 2 {
				t.Fatalf("delivered a message from %d to %d", e.Msg.GetFrom(), e.Msg.GetTo())
			}
		}
	})
}

// A configuration that cannot work is refused up front.
func TestTCPConfigIsChecked(t *testing.T) {
	cases := map[string]TCPConfig{
		"no id":            {Cluster: "c", Addr: "127.0.0.1:0"},
		"no cluster":       {ID: 1, Addr: "127.0.0.1:0"},
		"no address":       {ID: 1, Cluster: "c"},
		"negative queue":   {ID: 1, Cluster: "c", Addr: "127.0.0.1:0", QueueBytes: -1},
		"backoff reversed": {ID: 1, Cluster: "c", Addr: "127.0.0.1:0", MinBackoff: time.Second, MaxBackoff: time.Millisecond},
	}
	for name, cfg := range cases {
		if tr, err := NewTCPTransport(cfg); err == nil {
			_ = tr.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

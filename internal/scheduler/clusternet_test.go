package scheduler

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
)

// clusterNet is the network of the cluster test: the in-process one, or
// each node's TCP transport on loopback with faults injected where the
// node sends.
type clusterNet interface {
	// transport returns the transport for node id, booting again.
	transport(id uint64) replica.Transport
	// join connects the node that booted on it.
	join(id uint64, n *replica.Node)
	// leave disconnects a node that stopped.
	leave(id uint64)
	Isolate(id uint64, cut bool)
	SetFaults(f replica.Faults)
	Close()
}

// localClusterNet is the in-process network, which does it all itself.
type localClusterNet struct{ *replica.LocalNetwork }

func (n localClusterNet) transport(uint64) replica.Transport { return n.LocalNetwork }
func (n localClusterNet) join(id uint64, node *replica.Node) { n.Join(id, node) }
func (n localClusterNet) leave(uint64)                       {}

// tcpClusterNet runs every node's replica.TCPTransport on a loopback port,
// the same again when the node boots again.
type tcpClusterNet struct {
	t      *testing.T
	mu     sync.Mutex
	addrs  map[uint64]string
	trs    map[uint64]*replica.TCPTransport
	cut    map[uint64]bool // isolated nodes
	faults replica.Faults
	rng    *rand.Rand
	later  sync.WaitGroup // delayed sends
}

func newTCPClusterNet(t *testing.T, seed uint64) *tcpClusterNet {
	return &tcpClusterNet{
		t: t, addrs: map[uint64]string{}, trs: map[uint64]*replica.TCPTransport{},
		cut: map[uint64]bool{}, rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)),
	}
}

func (n *tcpClusterNet) SetFaults(f replica.Faults) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.faults = f
}

func (n *tcpClusterNet) Isolate(id uint64, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[id] = cut
}

func (n *tcpClusterNet) transport(id uint64) replica.Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	addr := n.addrs[id]
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	tr, err := replica.NewTCPTransport(replica.TCPConfig{ID: id, Cluster: "test", Addr: addr, Logger: warnLogger(n.t)})
	if err != nil {
		n.t.Fatal(err)
	}
	n.addrs[id] = tr.Addr().String()
	n.trs[id] = tr
	for _, other := range n.trs {
		other.SetPeers(n.addrs)
	}
	return &faultySender{Transport: tr, from: id, net: n}
}

func (n *tcpClusterNet) join(id uint64, node *replica.Node) {
	n.mu.Lock()
	tr := n.trs[id]
	n.mu.Unlock()
	if err := tr.Start(node); err != nil {
		n.t.Fatal(err)
	}
}

func (n *tcpClusterNet) leave(id uint64) {
	n.mu.Lock()
	tr := n.trs[id]
	delete(n.trs, id)
	n.mu.Unlock()
	if tr != nil {
		_ = tr.Close()
	}
}

func (n *tcpClusterNet) Close() {
	n.later.Wait()
	n.mu.Lock()
	trs := n.trs
	n.trs = map[uint64]*replica.TCPTransport{}
	n.mu.Unlock()
	for _, tr := range trs {
		_ = tr.Close()
	}
}

// faultySender applies the network's cuts and faults to what one node
// sends, before its TCP transport carries it.
type faultySender struct {
	replica.Transport
	from uint64
	net  *tcpClusterNet
}

func (s *faultySender) Send(from uint64, envs []replica.Envelope) {
	n := s.net
	n.mu.Lock()
	kept := envs[:0:0]
	for _, e := range envs {
		if !n.cut[s.from] && !n.cut[e.Msg.GetTo()] {
			kept = append(kept, e)
		}
	}
	f, rng := n.faults, n.rng
	drop, dup := rng.Float64() < f.Drop, rng.Float64() < f.Duplicate
	var delay time.Duration
	if f.MaxDelay > 0 && rng.Float64() < f.Reorder {
		delay = time.Duration(rng.Int64N(int64(f.MaxDelay)))
	}
	n.mu.Unlock()
	switch {
	case len(kept) == 0 || drop:
		return
	case delay > 0:
		n.later.Add(1)
		time.AfterFunc(delay, func() {
			defer n.later.Done()
			s.Transport.Send(from, kept)
		})
	default:
		s.Transport.Send(from, kept)
	}
	if dup {
		s.Transport.Send(from, kept)
	}
}

// warnLogger logs warnings and errors to the test's output.
func warnLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

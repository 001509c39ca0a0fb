package replica

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/testwait"
)

// network carries a test cluster's messages: the in-process LocalNetwork,
// or TCP streams on loopback, plain or TLS.
type network interface {
	// attach returns the transport of node id, and the function that
	// joins the node to it once the node is built.
	attach(t testing.TB, id uint64) (Transport, func(*Node))
	// isolate cuts, or restores, every link to and from a node.
	isolate(id uint64, cut bool)
	// leave takes a stopped node off the network; a node that joins again
	// under its id is reached where it was.
	leave(id uint64)
	// traffic returns the messages and bytes the nodes sent so far.
	traffic() (msgs, bytes uint64)
	close()
}

// networks are the transports every cluster scenario runs over.
var networks = []struct {
	name string
	new  func(t testing.TB) network
}{
	{"local", func(testing.TB) network { return &localNet{LocalNetwork: NewLocalNetwork(1)} }},
	{"tcp", func(t testing.TB) network { return newTCPNet(t, nil) }},
	{"tls", func(t testing.TB) network { return newTCPNet(t, newTestCA(t).config(t)) }},
}

// counter counts what nodes send.
type counter struct{ msgs, bytes atomic.Uint64 }

func (c *counter) count(envs []Envelope) {
	c.msgs.Add(uint64(len(envs)))
	for _, e := range envs {
		c.bytes.Add(uint64(proto.Size(e.Msg)))
	}
}

func (c *counter) traffic() (uint64, uint64) { return c.msgs.Load(), c.bytes.Load() }

// localNet is the in-process network.
type localNet struct {
	*LocalNetwork
	counter
}

func (n *localNet) attach(_ testing.TB, id uint64) (Transport, func(*Node)) {
	return &wire{Transport: n.LocalNetwork, counter: &n.counter}, func(node *Node) { n.Join(id, node) }
}

func (n *localNet) isolate(id uint64, cut bool) { n.Isolate(id, cut) }
func (n *localNet) leave(uint64)                {}
func (n *localNet) close()                      { n.Close() }

// tcpNet runs each node's TCPTransport on its own loopback port, the
// same again when the node restarts. Cut links are cut at the sender.
type tcpNet struct {
	tls *tls.Config
	counter

	mu    sync.Mutex
	addrs map[uint64]string
	trs   map[uint64]*TCPTransport
	cut   map[[2]uint64]bool
}

func newTCPNet(t testing.TB, tlsConfig *tls.Config) *tcpNet {
	t.Helper()
	return &tcpNet{tls: tlsConfig, addrs: map[uint64]string{}, trs: map[uint64]*TCPTransport{}, cut: map[[2]uint64]bool{}}
}

func (n *tcpNet) attach(t testing.TB, id uint64) (Transport, func(*Node)) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	addr := n.addrs[id]
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	tr, err := NewTCPTransport(TCPConfig{ID: id, Cluster: "test", Addr: addr, TLS: n.tls, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	n.addrs[id] = tr.Addr().String()
	n.trs[id] = tr
	for _, other := range n.trs {
		other.SetPeers(n.addrs)
	}
	w := &wire{Transport: tr, counter: &n.counter, cut: func(to uint64) bool { return n.isCut(id, to) }}
	return w, func(node *Node) {
		if err := tr.Start(node); err != nil {
			t.Fatal(err)
		}
	}
}

func (n *tcpNet) isCut(from, to uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[[2]uint64{from, to}]
}

func (n *tcpNet) isolate(id uint64, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for other := range n.addrs {
		n.cut[[2]uint64{id, other}] = cut
		n.cut[[2]uint64{other, id}] = cut
	}
}

func (n *tcpNet) leave(id uint64) {
	n.mu.Lock()
	tr := n.trs[id]
	delete(n.trs, id)
	n.mu.Unlock()
	if tr != nil {
		_ = tr.Close()
	}
}

func (n *tcpNet) close() {
	n.mu.Lock()
	trs := n.trs
	n.trs = nil
	n.mu.Unlock()
	for _, tr := range trs {
		_ = tr.Close()
	}
}

// wire is a node's side of a test network: it counts what the node sends
// and drops what crosses a cut link.
type wire struct {
	Transport
	*counter
	cut func(to uint64) bool // nil: nothing is cut here
}

func (w *wire) Send(from uint64, envs []Envelope) {
	if w.cut != nil {
		kept := make([]Envelope, 0, len(envs))
		for _, e := range envs {
			if !w.cut(e.Msg.GetTo()) {
				kept = append(kept, e)
			}
		}
		envs = kept
	}
	w.count(envs)
	w.Transport.Send(from, envs)
}

// testCA issues certificates for 127.0.0.1, good for both ends of a
// stream.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test cluster CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// config returns a mutual TLS configuration with a node certificate
// issued by the CA.
func (ca *testCA) config(t testing.TB) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      ca.pool,
		ClientCAs:    ca.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

// logLines keeps what a logger writes, a line per record, for tests to
// wait on.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	l.mu.Unlock()
	return len(p), nil
}

// has reports whether a line holds every one of parts.
func (l *logLines) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// waitFor waits until cond, over counters that signal nothing, holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, waitLimit, what, cond)
}

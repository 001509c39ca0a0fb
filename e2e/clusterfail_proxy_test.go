package e2e

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/boomerangd/boomerang/internal/replica/replicapb"
	"google.golang.org/protobuf/encoding/protodelim"
)

// replProxy stands in front of one node's replication port; the node
// advertises the proxy's address, so every replication stream to the
// node passes through it. A stream carries Raft messages one way, from
// the node that dialed it, and opens with a Hello naming that node: the
// proxy reads it and forwards the stream only while the link from that
// node is up. Cutting the links from A to B and from B to A partitions
// the two nodes fully; cutting one direction makes a one-way partition.
type replProxy struct {
	ln      net.Listener
	backend string // the node's real replication address

	mu    sync.Mutex
	cut   map[uint64]bool // nodes whose streams to this node are cut
	conns map[uint64][]net.Conn
	wg    sync.WaitGroup
}

// startReplProxy listens on a free loopback port until the test ends and
// forwards to backend.
func startReplProxy(t *testing.T, backend string) *replProxy {
	t.Helper()
	p := &replProxy{ln: listenLoopback(t), backend: backend, cut: map[uint64]bool{}, conns: map[uint64][]net.Conn{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		p.ln.Close()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

func (p *replProxy) addr() string { return p.ln.Addr().String() }

// setCut cuts (or heals) the link from node from to this proxy's node:
// open streams from it are closed, and new ones closed at their Hello.
func (p *replProxy) setCut(from uint64, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut[from] = cut
	if cut {
		for _, c := range p.conns[from] {
			c.Close()
		}
		p.conns[from] = nil
	}
}

func (p *replProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for from, cs := range p.conns {
		for _, c := range cs {
			c.Close()
		}
		delete(p.conns, from)
	}
}

func (p *replProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(in)
		}()
	}
}

// forward reads the stream's Hello, and if its sender's link is up,
// pipes the stream to the node until either end closes it or the link is
// cut.
func (p *replProxy) forward(in net.Conn) {
	defer in.Close()
	br := bufio.NewReader(in)
	var hello replicapb.Hello
	if err := protodelim.UnmarshalFrom(br, &hello); err != nil {
		return
	}
	out, err := net.Dial("tcp", p.backend)
	if err != nil {
		return
	}
	defer out.Close()
	from := hello.GetFrom()
	p.mu.Lock()
	if p.cut[from] {
		p.mu.Unlock()
		return
	}
	p.conns[from] = append(p.conns[from], in, out)
	p.mu.Unlock()
	if _, err := protodelim.MarshalTo(out, &hello); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(in, out) // the HelloReply
		in.Close()
		close(done)
	}()
	_, _ = io.Copy(out, br)
	out.Close()
	<-done
}

package replica

import (
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// LocalNetwork connects nodes in one process, for tests and benchmarks,
// with faults to inject: dropped, delayed, duplicated and reordered
// messages, and cut links. Messages are copied, as a wire would.
//
// Without faults a batch goes straight into the receiving node's queue
// from the sender's goroutine, which only appends to it: no goroutine
// stands between two nodes, as none does between a TCP stream's reader
// and its node. With faults each link delivers from its own goroutine, so
// that a delay holds up no one else. Either way a node that does not keep
// up loses what arrives beyond a bound (maxQueued), as on a wire.
type LocalNetwork struct {
	mu       sync.Mutex
	nodes    map[uint64]*Node
	links    map[[2]uint64]*link
	cut      map[[2]uint64]bool
	isolated map[uint64]bool
	faults   Faults
	rng      *rand.Rand
	closed   bool
	wg       sync.WaitGroup
}

// Faults are what a LocalNetwork does to messages. The zero value
// delivers everything at once.
type Faults struct {
	Drop      float64       // probability that a batch of messages is lost
	Duplicate float64       // probability that it arrives twice
	Reorder   float64       // probability that it waits behind the next one
	MaxDelay  time.Duration // it waits up to this long
}

type link struct {
	ch chan []Envelope
}

// NewLocalNetwork returns a network whose faults draw on seed.
func NewLocalNetwork(seed uint64) *LocalNetwork {
	return &LocalNetwork{
		nodes:    make(map[uint64]*Node),
		links:    make(map[[2]uint64]*link),
		cut:      make(map[[2]uint64]bool),
		isolated: make(map[uint64]bool),
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// Join makes a node reachable under its id, replacing any earlier one
// (a restarted node).
func (nw *LocalNetwork) Join(id uint64, n *Node) {
	nw.mu.Lock()
	nw.nodes[id] = n
	nw.mu.Unlock()
}

// SetFaults changes the faults from now on.
func (nw *LocalNetwork) SetFaults(f Faults) {
	nw.mu.Lock()
	nw.faults = f
	nw.mu.Unlock()
}

// Cut stops (or, with cut false, restores) delivery from one node to
// another; cut both ways for a full partition.
func (nw *LocalNetwork) Cut(from, to uint64, cut bool) {
	nw.mu.Lock()
	nw.cut[[2]uint64{from, to}] = cut
	nw.mu.Unlock()
}

// Isolate takes a node off the network (or, with cut false, puts it
// back): nothing it sends, and nothing sent to it, arrives meanwhile.
// Putting one node back leaves every other isolated node off, and links
// cut with Cut stay cut.
func (nw *LocalNetwork) Isolate(id uint64, cut bool) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.isolated[id] = cut
}

// Close stops every link and waits for them.
func (nw *LocalNetwork) Close() {
	nw.mu.Lock()
	if !nw.closed {
		nw.closed = true
		for _, l := range nw.links {
			close(l.ch)
		}
	}
	nw.mu.Unlock()
	nw.wg.Wait()
}

// Send implements Transport.
func (nw *LocalNetwork) Send(from uint64, envs []Envelope) {
	byPeer := map[uint64][]Envelope{}
	for _, e := range envs {
		to := e.Msg.GetTo()
		e.Msg = proto.CloneOf(e.Msg)
		byPeer[to] = append(byPeer[to], e)
	}
	var direct []func()
	defer func() {
		for _, deliver := range direct {
			deliver()
		}
	}()
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return
	}
	for to, batch := range byPeer {
		key := [2]uint64{from, to}
		if nw.cut[key] || nw.isolated[from] || nw.isolated[to] || nw.rng.Float64() < nw.faults.Drop {
			continue
		}
		if nw.faults == (Faults{}) {
			if n := nw.nodes[to]; n != nil {
				direct = append(direct, func() { n.receive(batch, maxQueued) })
			}
			continue
		}
		l := nw.link(key)
		copies := 1
		if nw.rng.Float64() < nw.faults.Duplicate {
			copies = 2
		}
		for range copies {
			select {
			case l.ch <- batch:
			default: // the peer is not keeping up: lost, as on a wire
			}
		}
	}
}

// maxQueued is how many messages a node may have waiting for its loop
// before more from the LocalNetwork are lost.
const maxQueued = 1 << 16

// link returns the link for key, starting it on first use. nw.mu is held.
func (nw *LocalNetwork) link(key [2]uint64) *link {
	l := nw.links[key]
	if l != nil {
		return l
	}
	l = &link{ch: make(chan []Envelope, 1024)}
	nw.links[key] = l
	nw.wg.Go(func() { nw.deliver(key, l) })
	return l
}

// deliver runs one link: it hands each batch to the receiving node after
// its delay, holding one back now and then to reorder it.
func (nw *LocalNetwork) deliver(key [2]uint64, l *link) {
	var held []Envelope
	for batch := range l.ch {
		nw.mu.Lock()
		f, to := nw.faults, nw.nodes[key[1]]
		delay := time.Duration(0)
		if f.MaxDelay > 0 {
			delay = time.Duration(nw.rng.Int64N(int64(f.MaxDelay)))
		}
		reorder := nw.rng.Float64() < f.Reorder
		nw.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay) // the wire's latency
		}
		if reorder && held == nil {
			held = batch
			continue
		}
		if to != nil {
			to.receive(batch, maxQueued)
			if held != nil {
				to.receive(held, maxQueued)
				held = nil
			}
		}
	}
}

var _ Transport = (*LocalNetwork)(nil)

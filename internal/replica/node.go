package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/boomerangd/boomerang/internal/store"
)

// Defaults for Config fields left at zero.
const (
	DefaultTick           = 100 * time.Millisecond
	DefaultElectionTicks  = 10
	DefaultHeartbeatTicks = 1
	DefaultCompactEvery   = 128
)

var (
	// ErrStopped: the node is not running.
	ErrStopped = errors.New("replica: node stopped")
	// ErrUnknownShard: the node hosts no group for the shard.
	ErrUnknownShard = errors.New("replica: shard not hosted here")
)

// StateMachine is what a Node feeds. Apply and Lead are called from the
// node's loop, in log order for each shard: they must hand the work on
// rather than do it there.
type StateMachine interface {
	// AppliedIndex returns how far the shard's state includes its log,
	// when the node starts.
	AppliedIndex(shard uint16) (uint64, error)
	// Apply is given the entries committed in one turn of the loop, each
	// shard's in order, empty ones (a new leader's, configuration changes)
	// included.
	Apply(committed []Committed)
	// Lead reports that this node leads the shard from term on, every
	// entry committed before that term having been given to Apply; term 0
	// reports that it no longer does.
	Lead(shard uint16, term uint64)
	// Leased reports that this node holds the lease of the shard again
	// after it had lapsed (see Node.Leased).
	Leased(shard uint16)
	// Restore replaces the shard's state with a snapshot from its leader:
	// once every entry given to Apply before is applied, the state
	// machine calls write, which writes the snapshot to the store, then
	// reads the shard's state from the store again.
	Restore(shard uint16, write func() error)
	// Drop forgets a shard this node no longer hosts: once every entry
	// given to Apply before is applied, the state machine calls write,
	// which deletes the shard's state and log from the store.
	Drop(shard uint16, write func() error)
}

// Config configures a Node.
type Config struct {
	// ID identifies the node among the replicas; it must be above 0.
	ID uint64
	// Peers are the voters of a group the node creates (one with no
	// persisted state); every node must be given the same. Default: this
	// node alone.
	Peers []uint64
	// Shards are the shards the node hosts from the start, besides those
	// it has a log of; Host adds more.
	Shards []uint16
	// Store persists the logs. Required.
	Store *store.Store
	// StateMachine is fed the committed entries. Required.
	StateMachine StateMachine
	// Mergeable says that proposals to one of StateMachine's shards may
	// be joined into one entry, their data concatenated in order: true
	// for entries that are protobuf messages of repeated fields (the
	// scheduler's storepb.CommandBatch), whose concatenation decodes as
	// each one's fields in turn. The proposals that wait for a shard when
	// a turn begins then cost the log one entry, up to maxMerged bytes.
	Mergeable bool
	// System, if set, is the state machine of the system group
	// (store.SystemShard), which the node hosts when Shards names it or
	// Host adds it; StateMachine gets every other shard's entries.
	// Optional.
	System StateMachine
	// Transport carries messages to the other replicas; required when
	// Peers holds others.
	Transport Transport
	// Tick is Raft's tick; elections and heartbeats count in ticks.
	// Default 100 ms.
	Tick time.Duration
	// ElectionTicks and HeartbeatTicks are Raft's election timeout (a
	// random 1 to 2 times it) and heartbeat interval. Defaults 10 and 1:
	// a leader's loss is noticed after 1 to 2 seconds.
	ElectionTicks, HeartbeatTicks int
	// CompactEvery is how many applied entries whose state is durable a
	// group's log keeps before it is truncated. Default 128.
	CompactEvery uint64
	// Failed is told of a storage failure, after which the node stops.
	// Optional.
	Failed func(error)
	// Clock drives ticks. Default: the real clock.
	Clock clockwork.Clock
	// Logger receives leadership changes and errors. Default: discard.
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() {
	if len(c.Peers) == 0 {
		c.Peers = []uint64{c.ID}
	}
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.CompactEvery == 0 {
		c.CompactEvery = DefaultCompactEvery
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Failed == nil {
		c.Failed = func(error) {}
	}
}

func (c *Config) validate() error {
	switch {
	case c.ID == 0:
		return errors.New("replica: Config.ID must be above 0")
	case c.Store == nil || c.StateMachine == nil:
		return errors.New("replica: Config.Store and StateMachine are required")
	case !slices.Contains(c.Peers, c.ID):
		return fmt.Errorf("replica: Config.Peers %v must include the node's own id %d", c.Peers, c.ID)
	case len(c.Peers) > 1 && c.Transport == nil:
		return errors.New("replica: Config.Transport is required with other peers")
	case c.ElectionTicks <= c.HeartbeatTicks || c.ElectionTicks < 4:
		return errors.New("replica: Config.ElectionTicks must be at least 4 and exceed HeartbeatTicks")
	}
	return nil
}

// Node runs the Raft groups of the shards it hosts. Its methods are safe
// for concurrent use.
type Node struct {
	cfg    Config
	groups map[uint16]*group

	mu       sync.Mutex
	props    []proposal
	incoming []Envelope
	lost     []lostPeer
	applied  map[uint16]uint64 // what the state machine reports written
	notify   chan struct{}

	stop, done chan struct{}
	stopOnce   sync.Once
	work       sync.WaitGroup // snapshots being prepared

	epoch   time.Time    // leases count from here (see lease.go)
	turn    time.Time    // when the loop's current turn began
	syncDue bool         // a tick passed: sync if that lets a log be truncated
	batch   *store.Batch // the log batch, reused (logBatch)
	holding []*group     // groups with proposals held (proposeHeld)

	hosted   atomic.Pointer[map[uint16]*group] // groups, for other goroutines
	ctl      []func()                          // work for the loop (under mu)
	confs    map[string]confWait               // configuration changes awaited
	nextConf atomic.Uint64                     // numbers them
	reads    map[string]chan uint64            // read barriers awaited, by request context (loop only)
	nextRead atomic.Uint64                     // numbers them
}

// Committed is a shard's entries committed together.
type Committed struct {
	Shard   uint16
	Entries []*raftpb.Entry
}

type proposal struct {
	shard uint16
	data  []byte
}

// lostPeer is a peer a transport could not reach with a message of the
// shard's group, to report to the group.
type lostPeer struct {
	shard uint16
	peer  uint64
}

// New checks cfg and builds a node; Start loads the groups.
func New(cfg Config) (*Node, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.System != nil {
		cfg.StateMachine = systemMux{system: cfg.System, shards: cfg.StateMachine}
	}
	return &Node{
		cfg:     cfg,
		epoch:   cfg.Clock.Now(),
		groups:  make(map[uint16]*group, len(cfg.Shards)),
		confs:   make(map[string]confWait),
		applied: make(map[uint16]uint64),
		notify:  make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}, nil
}

// Start loads the groups of Config.Shards and of every shard the store
// holds a log of, creating those it has none of with Config.Peers as
// their voters, and starts the loop. A group whose only voter is this
// node campaigns at once and leads when Start returns.
func (n *Node) Start() error {
	shards, err := n.cfg.Store.RaftShards()
	if err != nil {
		return err
	}
	b := n.cfg.Store.NewBatch()
	for _, shard := range append(shards, n.cfg.Shards...) {
		if n.groups[shard] != nil {
			continue
		}
		g, err := n.load(shard, n.cfg.Peers, b)
		if err != nil {
			return fmt.Errorf("replica: shard %d: %w", shard, err)
		}
		n.groups[shard] = g
	}
	if err := n.cfg.Store.Commit(b); err != nil {
		return err
	}
	n.publish()
	if err := n.campaignAlone(); err != nil {
		return err
	}
	go n.run()
	return nil
}

// campaignAlone makes every group whose sole voter is this node elect
// itself, over the two Readys of its pre-vote and vote.
func (n *Node) campaignAlone() error {
	alone := false
	for _, g := range n.groups {
		if soleVoter(g) && !g.leader {
			if err := g.rn.Campaign(); err != nil {
				return err
			}
			alone = true
		}
	}
	for range 2 {
		if !alone {
			break
		}
		if err := n.ready(nil); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the loop and waits for it. Entries not yet given to the state
// machine are given again after the next Start.
func (n *Node) Stop() {
	n.stopOnce.Do(func() { close(n.stop) })
	<-n.done
	n.work.Wait()
}

// Propose proposes data for a shard's log. It is dropped, without an
// error, if this node turns out not to lead the shard; the state machine
// learns what was committed from Apply.
func (n *Node) Propose(shard uint16, data []byte) error {
	if n.group(shard) == nil {
		return fmt.Errorf("%w: %d", ErrUnknownShard, shard)
	}
	n.mu.Lock()
	n.props = append(n.props, proposal{shard: shard, data: data})
	n.mu.Unlock()
	n.wake()
	return nil
}

// Receive takes messages from other replicas.
func (n *Node) Receive(envs []Envelope) { n.receive(envs, 0) }

// receive is Receive that, with max > 0, drops envs when the loop has max
// messages or more waiting.
func (n *Node) receive(envs []Envelope, max int) {
	n.mu.Lock()
	if max > 0 && len(n.incoming) >= max {
		n.mu.Unlock()
		return
	}
	n.incoming = append(n.incoming, envs...)
	n.mu.Unlock()
	n.wake()
}

// Unreachable reports that a message of the shard's group could not be
// sent to peer, so that a leader probes the peer rather than keep
// streaming entries it never gets.
func (n *Node) Unreachable(shard uint16, peer uint64) {
	n.mu.Lock()
	n.lost = append(n.lost, lostPeer{shard: shard, peer: peer})
	n.mu.Unlock()
}

// Applied reports that the shard's state, as written (not necessarily
// synced), includes its log up to index.
func (n *Node) Applied(shard uint16, index uint64) {
	n.mu.Lock()
	n.applied[shard] = max(n.applied[shard], index)
	n.mu.Unlock()
}

func (n *Node) wake() {
	select {
	case n.notify <- struct{}{}:
	default:
	}
}

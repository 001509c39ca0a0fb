package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Member is this node's part in the cluster: its membership, its agent,
// its bid for the controller's role, and its report of the shards it
// leads. Create it with New, Start it once the node's replicas run, Stop
// it before stopping them.
type Member struct {
	cfg    Config
	log    *slog.Logger
	prefix string

	state      atomic.Pointer[State] // the latest read, for routing and status
	forwardKey atomic.Pointer[[]byte]
	changed    chan struct{} // etcd changed under the prefix
	stop       context.CancelFunc
	wg         sync.WaitGroup

	stopOnce sync.Once

	unplaced map[uint16]time.Time // the agent's: copies hosted here and not placed here, since when
}

// New checks cfg and returns a member.
func New(cfg Config) (*Member, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Member{
		cfg: cfg, log: cfg.Logger, prefix: Prefix(cfg.Cluster),
		changed: make(chan struct{}, 1), unplaced: make(map[uint16]time.Time),
	}, nil
}

// Start joins the cluster and runs the member's loops until Stop. It
// returns at once: while etcd cannot be reached the loops retry, and the
// node serves with the replicas it has.
func (m *Member) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	m.wg.Go(func() { m.sessions(ctx) })
	m.wg.Go(func() { m.watch(ctx) })
	m.wg.Go(func() { m.agent(ctx) })
}

// stopGrace bounds how long Stop waits for etcd to take the node's
// leave before it closes the client.
const stopGrace = 2 * time.Second

// Stop leaves the loops and closes the etcd client: the node's
// membership and its bid for the controller's role end at once when etcd
// answers, else when their lease lapses. Stop may be called more than
// once.
func (m *Member) Stop() {
	m.stopOnce.Do(func() {
		if m.stop == nil {
			_ = m.cfg.Etcd.Close()
			return
		}
		m.stop()
		done := make(chan struct{})
		go func() {
			m.wg.Wait()
			close(done)
		}()
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			// etcd does not answer: an election abandoned by its context
			// resigns with the client's own, which only closing ends.
		}
		_ = m.cfg.Etcd.Close()
		<-done
	})
}

// State returns the latest state read from etcd, or nil before the
// first read.
func (m *Member) State() *State { return m.state.Load() }

// ID returns this node's id.
func (m *Member) ID() uint64 { return m.cfg.Node.ID }

// Client returns the etcd client.
func (m *Member) Client() *clientv3.Client { return m.cfg.Etcd }

// Cluster returns the cluster's name.
func (m *Member) Cluster() string { return m.cfg.Cluster }

// read reads the state and keeps it for State.
func (m *Member) read(ctx context.Context) (*State, error) {
	s, err := ReadState(ctx, m.cfg.Etcd, m.cfg.Cluster)
	if err != nil {
		return nil, err
	}
	m.state.Store(s)
	if m.cfg.Peers != nil {
		peers := make(map[uint64]string, len(s.Nodes))
		for id, n := range s.Nodes {
			peers[id] = n.Raft
		}
		m.cfg.Peers.SetPeers(peers)
	}
	return s, nil
}

// watch signals every change under the prefix.
func (m *Member) watch(ctx context.Context) {
	for ctx.Err() == nil {
		wc := m.cfg.Etcd.Watch(clientv3.WithRequireLeader(ctx), m.prefix, clientv3.WithPrefix())
		for range wc {
			select {
			case m.changed <- struct{}{}:
			default:
			}
		}
		if !m.pause(ctx) {
			return
		}
	}
}

// pause waits one interval, and reports false once ctx ends.
func (m *Member) pause(ctx context.Context) bool {
	t := time.NewTimer(m.cfg.Interval)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// next waits for a change or one interval, and reports false once ctx
// ends.
func (m *Member) next(ctx context.Context) bool {
	t := time.NewTimer(m.cfg.Interval)
	defer t.Stop()
	select {
	case <-m.changed:
		return true
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sessions keeps a session with etcd: under its lease the node is a
// member, reports what it leads, and campaigns to be the controller. A
// lost session (etcd gone longer than the lease) is replaced.
func (m *Member) sessions(ctx context.Context) {
	for ctx.Err() == nil {
		s, err := concurrency.NewSession(m.cfg.Etcd, concurrency.WithTTL(m.cfg.SessionTTL), concurrency.WithContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("etcd session", "err", err)
			}
			m.pause(ctx)
			continue
		}
		m.session(ctx, s)
		// Give up membership and the election at once rather than after
		// the lease: ctx may be over already.
		s.Orphan()
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = m.cfg.Etcd.Revoke(rctx, s.Lease())
		cancel()
	}
}

// session runs the member's work under one session until it ends.
func (m *Member) session(ctx context.Context, s *concurrency.Session) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Done():
			m.log.Warn("etcd session lost; joining again")
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := m.register(ctx, s); err != nil {
		if ctx.Err() == nil {
			m.log.Warn("register in etcd", "err", err)
		}
		m.pause(ctx)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.report(ctx, s) })
	wg.Go(func() { m.control(ctx, s) })
	wg.Wait()
}

// register puts this node's info under the session's lease.
func (m *Member) register(ctx context.Context, s *concurrency.Session) error {
	info, err := json.Marshal(m.cfg.Node)
	if err != nil {
		return err
	}
	_, err = m.cfg.Etcd.Put(ctx, m.key(nodesDir), string(info), clientv3.WithLease(s.Lease()))
	if err == nil {
		m.log.Info("joined the cluster", "cluster", m.cfg.Cluster, "node", m.cfg.Node.ID, "raft", m.cfg.Node.Raft)
	}
	return err
}

func (m *Member) key(dir string) string {
	return m.prefix + dir + strconv.FormatUint(m.cfg.Node.ID, 10)
}

// report keeps the shards this node leads, and their terms, in etcd,
// writing only when they change.
func (m *Member) report(ctx context.Context, s *concurrency.Session) {
	var last map[uint16]uint64
	for m.pause(ctx) {
		st, err := m.cfg.Local.Status(ctx)
		if err != nil {
			continue
		}
		leads := make(map[uint16]uint64)
		for _, sh := range st {
			if sh.Leader == m.cfg.Node.ID {
				leads[sh.Shard] = sh.Term
			}
		}
		if last != nil && maps.Equal(leads, last) {
			continue
		}
		data, err := json.Marshal(leads)
		if err != nil {
			continue
		}
		if _, err := m.cfg.Etcd.Put(ctx, m.key(leadersDir), string(data), clientv3.WithLease(s.Lease())); err != nil {
			if ctx.Err() == nil {
				m.log.Warn("report leaders to etcd", "err", err)
			}
			continue
		}
		last = leads
	}
}

// errFenced: the map changed since the step was planned.
var errFenced = errors.New("cluster: the shard map changed; step not taken")

// fence reads the map's revision again and refuses a step planned on
// another.
func (m *Member) fence(ctx context.Context, rev int64) error {
	resp, err := m.cfg.Etcd.Get(ctx, m.prefix+mapKey)
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != rev {
		return fmt.Errorf("%w (planned on revision %d)", errFenced, rev)
	}
	return nil
}

// ForwardKey returns the cluster's key for signing requests one node
// forwards to another, creating it in etcd if no node has yet.
func (m *Member) ForwardKey(ctx context.Context) ([]byte, error) {
	if k := m.forwardKey.Load(); k != nil {
		return *k, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	key := m.prefix + forwardKeyName
	resp, err := m.cfg.Etcd.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(fresh))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: forwarding key: %w", err)
	}
	k := fresh
	if !resp.Succeeded {
		k = resp.Responses[0].GetResponseRange().Kvs[0].Value
	}
	m.forwardKey.Store(&k)
	return k, nil
}

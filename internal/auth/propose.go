package auth

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
	"github.com/boomerangd/boomerang/internal/store"
)

// Proposer is the replica node that hosts the system group: Auth
// proposes its changes there and reports how far its state includes the
// log.
type Proposer interface {
	Propose(shard uint16, data []byte) error
	Applied(shard uint16, index uint64)
	// ReadBarrier waits until the local replica has applied everything
	// committed before the call (replica.Node.ReadBarrier).
	ReadBarrier(ctx context.Context, shard uint16) error
}

// Attach gives Auth the node that hosts the system group, from which it
// is fed (as its replica.StateMachine); changes fail with ErrNotAttached
// before.
func (a *Auth) Attach(p Proposer) {
	a.pmu.Lock()
	a.node = p
	applied := a.appliedIndex
	a.pmu.Unlock()
	if applied > 0 {
		p.Applied(store.SystemShard, applied)
	}
}

// AwaitLeader waits until this node leads the system group: at once on a
// standalone node once its replica node started.
func (a *Auth) AwaitLeader(ctx context.Context) error {
	select {
	case <-a.led:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CatchUp waits until this node's replica of the system group has
// applied every change committed before the call. In a cluster, reads
// wait for one after the node starts, and again after a miss (see
// doc.go, Replication).
func (a *Auth) CatchUp(ctx context.Context) error {
	a.pmu.Lock()
	node := a.node
	a.pmu.Unlock()
	if node == nil {
		return ErrNotAttached
	}
	if err := node.ReadBarrier(ctx, store.SystemShard); err != nil {
		return err
	}
	a.synced.Store(true)
	return nil
}

// recheck reports, in a cluster, whether a read that missed should look
// again: once the replica caught up, at most Config.WriteTimeout later,
// it holds every change acknowledged before (a client registered or a
// session issued through another node a moment ago).
func (a *Auth) recheck() bool {
	if !a.cfg.Replicated {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
	defer cancel()
	return a.CatchUp(ctx) == nil
}

// Open lets a cluster node's Auth answer logins and sessions, once the
// caller has made the first admin if no node had (Bootstrap): before,
// they are answered ErrCatchingUp, not "invalid credentials".
func (a *Auth) Open() { a.opened.Store(true) }

// readable reports whether this node's state may answer reads: always
// on a standalone node; in a cluster once it is open and its replica has
// caught up since the node started (or since the replica was dropped).
func (a *Auth) readable() bool { return a.opened.Load() && (a.synced.Load() || a.recheck()) }

// newOrigin names this process's proposals, so that it recognizes them
// when they are applied, and not those of an earlier run.
func newOrigin() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return binary.LittleEndian.Uint64(b[:])
}

// commit proposes cmd to the system group and waits until this node has
// applied it, at most Config.WriteTimeout. The command carries its
// proposer's clock.
func (a *Auth) commit(cmd *authpb.SystemCommand) (outcome, error) {
	if err := a.failed.Load(); err != nil {
		return outcome{}, fmt.Errorf("auth: %w", *err)
	}
	done := make(chan outcome, 1)
	a.pmu.Lock()
	node := a.node
	a.proposals++
	cmd.Origin, cmd.Proposal = a.origin, a.proposals
	if node != nil {
		a.waiting[cmd.Proposal] = done
	}
	a.pmu.Unlock()
	if node == nil {
		return outcome{}, ErrNotAttached
	}
	defer func() {
		a.pmu.Lock()
		delete(a.waiting, cmd.Proposal)
		a.pmu.Unlock()
	}()
	data, err := proto.Marshal(cmd)
	if err != nil {
		return outcome{}, fmt.Errorf("auth: encode change: %w", err)
	}
	if err := node.Propose(store.SystemShard, data); err != nil {
		return outcome{}, fmt.Errorf("auth: %w", err)
	}
	timer := time.NewTimer(a.cfg.WriteTimeout) // real time: the commit's, not the sessions' clock
	defer timer.Stop()
	select {
	case out := <-done:
		return out, nil
	case <-timer.C:
		if err := a.failed.Load(); err != nil {
			return outcome{}, fmt.Errorf("auth: %w", *err)
		}
		return outcome{}, ErrNoLeader
	}
}

// answer hands an applied proposal's outcome to its waiter, if it still
// waits.
func (a *Auth) answer(proposal uint64, out outcome) {
	a.pmu.Lock()
	done := a.waiting[proposal]
	a.pmu.Unlock()
	if done != nil {
		select {
		case done <- out:
		default: // a duplicate of the proposal, committed twice: the first answered
		}
	}
}

// noteApplied records how far the state includes the log and tells the
// node.
func (a *Auth) noteApplied(index uint64) {
	a.pmu.Lock()
	a.appliedIndex = index
	node := a.node
	a.pmu.Unlock()
	if node != nil {
		node.Applied(store.SystemShard, index)
	}
}

// load reads the system group's state, clients and sessions, from the
// store, replacing what is in memory.
func (a *Auth) load() error {
	list, err := a.st.ListClients()
	if err != nil {
		return fmt.Errorf("auth: load clients: %w", err)
	}
	clients := make(map[string]*entry, len(list))
	for _, rec := range list {
		e, stale, err := decodeEntry(rec, a.keys)
		if err != nil {
			return err
		}
		e.stale = stale
		clients[rec.Id] = e
	}
	var sessions []*session
	err = a.st.ScanSessions(func(_, v []byte) error {
		var r authpb.Session
		if err := proto.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("%w: session record: %v", store.ErrCorrupt, err)
		}
		s, ok := sessionOf(&r)
		if !ok {
			return fmt.Errorf("%w: session record without a key", store.ErrCorrupt)
		}
		sessions = append(sessions, s)
		return nil
	})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.clients = clients
	a.mu.Unlock()
	a.sessions.replaceAll(sessions)
	return nil
}

// Reseal seals again, with the first of Config.SecretKeys, every
// record whose signing secrets are in the clear or sealed with another
// key, through the system group. Every node must be given the same keys.
func (a *Auth) Reseal() error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.mu.RLock()
	var stale []*entry
	for _, e := range a.clients {
		if e.stale {
			stale = append(stale, e)
		}
	}
	a.mu.RUnlock()
	for _, e := range stale {
		if err := a.put(e.with(), putOptions{}); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("auth: seal signing secrets of %q: %w", e.rec.Id, err)
		}
	}
	if len(stale) > 0 {
		a.cfg.Logger.Info("sealed signing secrets with the current secret key", "clients", len(stale), "key_id", fmt.Sprintf("%x", a.keys.keys[0].id))
	}
	return nil
}

// putOptions are the conditions and effects of a client write.
type putOptions struct {
	create, onlyIfEmpty bool
	endSessions         bool
	keepSession         string
}

// put writes e's record through the system group. writeMu is held.
func (a *Auth) put(e *entry, o putOptions) error {
	rec := e.encode(a.keys)
	data, err := proto.Marshal(rec)
	if err != nil {
		return fmt.Errorf("auth: encode client %q: %w", rec.Id, err)
	}
	out, err := a.commit(&authpb.SystemCommand{
		TimeMs: a.cfg.Clock.Now().UnixMilli(),
		Change: &authpb.SystemCommand_PutClient{PutClient: &authpb.PutClient{
			Client: data, Create: o.create, OnlyIfEmpty: o.onlyIfEmpty, EndSessions: o.endSessions, KeepSession: o.keepSession,
		}},
	})
	if err != nil {
		return err
	}
	return out.err(rec.Id)
}

// err is the error a refused change gives.
func (o outcome) err(client string) error {
	switch o.code {
	case refusedExists:
		return fmt.Errorf("%w: %q", ErrExists, client)
	case refusedNotFound:
		return fmt.Errorf("%w: %q", ErrNotFound, client)
	case refusedLastAdmin:
		return ErrLastAdmin
	case refusedExpired:
		return ErrSessionExpired
	}
	return nil
}

package auth

import (
	"fmt"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Auth is the state machine of the system group (store.SystemShard): its
// state is every client and session, in the store and in memory. Apply
// is a pure function of that state and the command: it reads no clock
// and no random source, so every replica holds the same clients and
// sessions once it has applied the same log.
//
// Unlike the task shards', the system group's entries are applied on the
// replica node's loop itself: they are few (client changes and logins),
// each costs an unsynced store write, and applying them there keeps the
// in-memory state in log order without a loop of its own.

// outcome is what applying a command did: a code that its proposer turns
// into an error, and for EndSessions how many live sessions ended.
type outcome struct {
	code  outcomeCode
	ended int
}

type outcomeCode uint8

const (
	applied outcomeCode = iota
	refusedExists
	refusedNotFound
	refusedLastAdmin
	refusedExpired
)

var _ replica.StateMachine = (*Auth)(nil)

// AppliedIndex implements replica.StateMachine.
func (a *Auth) AppliedIndex(uint16) (uint64, error) {
	m, err := a.st.ShardMeta(store.SystemShard)
	return m.GetApplied(), err
}

// Apply implements replica.StateMachine: it applies the commands in one
// unsynced store batch with the applied index, then answers the waiting
// proposals of this process among them.
func (a *Auth) Apply(committed []replica.Committed) {
	if a.failed.Load() != nil {
		return
	}
	b := a.st.NewBatch()
	type answer struct {
		proposal uint64
		out      outcome
	}
	var answers []answer
	var last uint64
	for _, c := range committed {
		for _, e := range c.Entries {
			cmd, err := decodeCommand(e)
			if err != nil {
				a.fail(err)
				return
			}
			if cmd == nil {
				continue
			}
			out, err := a.apply(b, cmd, e.GetIndex())
			if err != nil {
				a.fail(fmt.Errorf("auth: system log entry %d: %w", e.GetIndex(), err))
				return
			}
			if cmd.Origin == a.origin {
				answers = append(answers, answer{cmd.Proposal, out})
			}
		}
		last = c.Entries[len(c.Entries)-1].GetIndex()
	}
	if err := b.SetApplied(store.SystemShard, last, 0); err != nil {
		a.fail(err)
		return
	}
	if err := a.st.CommitNoSync(b); err != nil {
		a.fail(fmt.Errorf("auth: apply: %w", err))
		return
	}
	a.noteApplied(last)
	for _, ans := range answers {
		a.answer(ans.proposal, ans.out)
	}
}

// decodeCommand reads a log entry: nil for one that holds no command (a
// new leader's empty entry, a configuration change).
func decodeCommand(e *raftpb.Entry) (*authpb.SystemCommand, error) {
	if e.GetType() != raftpb.EntryType_EntryNormal || len(e.Data) == 0 {
		return nil, nil
	}
	cmd := new(authpb.SystemCommand)
	if err := proto.Unmarshal(e.Data, cmd); err != nil {
		return nil, fmt.Errorf("%w: system log entry %d: %v", store.ErrCorrupt, e.GetIndex(), err)
	}
	return cmd, nil
}

// apply applies one command to b and to the state in memory.
func (a *Auth) apply(b *store.Batch, cmd *authpb.SystemCommand, index uint64) (outcome, error) {
	at := time.UnixMilli(cmd.TimeMs)
	switch c := cmd.Change.(type) {
	case *authpb.SystemCommand_PutClient:
		return a.applyPutClient(b, c.PutClient)
	case *authpb.SystemCommand_DeleteClient:
		return a.applyDeleteClient(b, c.DeleteClient)
	case *authpb.SystemCommand_PutSession:
		return a.applyPutSession(b, c.PutSession, at, index)
	case *authpb.SystemCommand_EndSessions:
		return a.applyEndSessions(b, c.EndSessions, at)
	}
	return outcome{}, fmt.Errorf("%w: unknown system command %T", store.ErrCorrupt, cmd.Change)
}

func (a *Auth) applyPutClient(b *store.Batch, pc *authpb.PutClient) (outcome, error) {
	rec := new(storepb.Client)
	if err := proto.Unmarshal(pc.Client, rec); err != nil {
		return outcome{}, fmt.Errorf("%w: client record: %v", store.ErrCorrupt, err)
	}
	e, stale, err := decodeEntry(rec, a.keys)
	if err != nil {
		return outcome{}, err
	}
	e.stale = stale
	a.mu.RLock()
	old, exists := a.clients[rec.Id]
	empty := len(a.clients) == 0
	a.mu.RUnlock()
	switch {
	case pc.OnlyIfEmpty && !empty, pc.Create && exists:
		return outcome{code: refusedExists}, nil
	case !pc.Create && !pc.OnlyIfEmpty && !exists:
		return outcome{code: refusedNotFound}, nil
	case exists && old.role == RoleAdmin && e.role != RoleAdmin && a.admins() == 1:
		return outcome{code: refusedLastAdmin}, nil
	}
	if err := b.PutClient(rec); err != nil {
		return outcome{}, err
	}
	a.mu.Lock()
	a.clients[rec.Id] = e
	a.mu.Unlock()
	if pc.EndSessions {
		ended := a.sessions.end(rec.Id, func(s *session) bool { return s.handle != pc.KeepSession })
		return outcome{}, deleteSessions(b, ended)
	}
	return outcome{}, nil
}

func (a *Auth) applyDeleteClient(b *store.Batch, id string) (outcome, error) {
	e, ok := a.lookup(id)
	switch {
	case !ok:
		return outcome{code: refusedNotFound}, nil
	case e.role == RoleAdmin && a.admins() == 1:
		return outcome{code: refusedLastAdmin}, nil
	}
	if err := b.DeleteClient(id); err != nil {
		return outcome{}, err
	}
	a.mu.Lock()
	delete(a.clients, id)
	a.mu.Unlock()
	return outcome{}, deleteSessions(b, a.sessions.end(id, func(*session) bool { return true }))
}

func (a *Auth) applyPutSession(b *store.Batch, ps *authpb.PutSession, at time.Time, index uint64) (outcome, error) {
	s, ok := sessionOf(ps.GetSession())
	if !ok {
		return outcome{}, fmt.Errorf("%w: session record without a key", store.ErrCorrupt)
	}
	s.index = index
	if a.sessions.get(s.key) != nil {
		return outcome{}, nil // a duplicate of the proposal (a message the network repeated)
	}
	if e, ok := a.lookup(s.client); !ok || e.role != s.role {
		return outcome{code: refusedNotFound}, nil // deregistered, or its role changed, meanwhile
	}
	if len(ps.Replaces) > 0 {
		old := a.sessions.get(sessionKey(ps.Replaces))
		if old == nil || !at.Before(old.expires) {
			return outcome{code: refusedExpired}, nil
		}
		a.sessions.expire(old, at)
		if err := putSession(b, old); err != nil {
			return outcome{}, err
		}
	}
	if ps.SweepBeforeMs != 0 {
		if err := deleteSessions(b, a.sessions.sweep(time.UnixMilli(ps.SweepBeforeMs))); err != nil {
			return outcome{}, err
		}
	}
	if err := putSession(b, s); err != nil {
		return outcome{}, err
	}
	return outcome{}, deleteSessions(b, a.sessions.add(s, int(max(ps.MaxPerClient, 1))))
}

func (a *Auth) applyEndSessions(b *store.Batch, es *authpb.EndSessions, at time.Time) (outcome, error) {
	ended := a.sessions.end(es.Client, func(s *session) bool {
		return (len(es.Key) == 0 || string(s.key[:]) == string(es.Key)) &&
			(es.Handle == "" || s.handle == es.Handle) &&
			(es.Keep == "" || s.handle != es.Keep)
	})
	n := 0
	for _, s := range ended {
		if at.Before(s.expires) {
			n++
		}
	}
	return outcome{ended: n}, deleteSessions(b, ended)
}

func putSession(b *store.Batch, s *session) error {
	v, err := proto.Marshal(s.record())
	if err != nil {
		return err
	}
	return b.PutSession(s.key[:], v)
}

func deleteSessions(b *store.Batch, list []*session) error {
	for _, s := range list {
		if err := b.DeleteSession(s.key[:]); err != nil {
			return err
		}
	}
	return nil
}

// Lead implements replica.StateMachine.
func (a *Auth) Lead(_ uint16, term uint64) {
	if term > 0 {
		a.leadOnce.Do(func() { close(a.led) })
	}
}

// Leased implements replica.StateMachine: the system group's reads are
// local (see doc.go), so leases do not matter to it.
func (a *Auth) Leased(uint16) {}

// Restore implements replica.StateMachine: every entry given to Apply
// is applied already, so the snapshot is written at once and the state
// read again.
func (a *Auth) Restore(shard uint16, write func() error) { a.replace(shard, write) }

// Drop implements replica.StateMachine: the node no longer hosts the
// system group, whose state goes.
func (a *Auth) Drop(shard uint16, write func() error) {
	a.synced.Store(!a.cfg.Replicated)
	a.replace(shard, write)
}

// replace writes new state with write and reads it.
func (a *Auth) replace(shard uint16, write func() error) {
	err := write()
	if err == nil {
		err = a.load()
	}
	var applied uint64
	if err == nil {
		applied, err = a.AppliedIndex(shard)
	}
	if err != nil {
		a.fail(err)
		return
	}
	a.noteApplied(applied)
}

// fail stops changes after a storage failure: the state in memory may be
// ahead of the store's.
func (a *Auth) fail(err error) {
	if a.failed.CompareAndSwap(nil, &err) {
		a.cfg.Logger.Error("client and session changes stopped after a storage failure; restart the server once the disk is fixed", "err", err)
	}
}

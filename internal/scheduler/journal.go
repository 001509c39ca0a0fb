package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A decision records its writes as a command for its shard
// (store.Command). At the end of a loop turn the partition proposes each
// shard's commands as one entry of the shard's replicated log; once the
// entry is committed, every replica applies its commands to its state,
// and on the leader the decisions' continuations (then) run. Every log
// entry is synced before it is committed, so a change takes effect, and
// its caller hears of it, only once it survives a power loss.

// pendingCmd is a decided command until it is applied.
type pendingCmd struct {
	shard uint16
	c     store.Command
	ops   []func(err error) // in opsBuf while they fit
	id    uint64            // proposal number, once proposed
	// linger: no one waits for the command but the partition itself, so
	// it may wait for others of its shard to share a log entry (hold).
	linger bool
	// until is when a command held back must be proposed, on the
	// system's monotonic clock.
	until time.Time

	opsBuf [2]func(err error)
}

func newPendingCmd(shard uint16, op storepb.Op) *pendingCmd {
	pc := &pendingCmd{shard: shard}
	pc.c.Start(op)
	pc.ops = pc.opsBuf[:0]
	return pc
}

// begin starts the command of a decision on shard.
func (p *partition) begin(shard uint16, op storepb.Op) {
	p.cur = newPendingCmd(shard, op)
	p.open[shard] = append(p.open[shard], p.cur)
}

// abandon drops the command being decided, which must not have been
// given continuations or overlay entries yet.
func (p *partition) abandon() {
	q := p.open[p.cur.shard]
	p.open[p.cur.shard] = q[:len(q)-1]
	finish(p.cur, ErrClosed)
	p.cur = newPendingCmd(p.cur.shard, storepb.Op_OP_UNSPECIFIED)
}

// cmd is the command being decided.
func (p *partition) cmd() *store.Command { return &p.cur.c }

// then queues fn to run once the current decision is applied, or with the
// error that kept it from being applied.
func (p *partition) then(fn func(err error)) { p.cur.ops = append(p.cur.ops, fn) }

// maxPlaced bounds the bytes that tasks placed anywhere put on one shard
// in a stint (place) or a batch (spreader): past it they move on, so that
// they still go round the shards, and so that a shard's log entry stays
// about the size Raft sends in one message.
const maxPlaced = 1 << 20

// placedOverhead is what place counts for a task besides its payload, so
// that tasks with small payloads move on too.
const placedOverhead = 64

// place is the shard for a new task of size payload bytes that may go
// anywhere, given candidate, a shard this partition leads: the shard the
// partition's stint of such tasks is on, while the partition leads it
// and it has room (maxPlaced), else candidate, which starts the next
// stint. Tasks that come one after the other then share one log entry a
// node turn and make long runs of neighbouring keys in the state, and
// stints follow the candidates around the shards.
func (p *partition) place(candidate uint16, size int) uint16 {
	cost := size + placedOverhead
	if p.anywhere >= 0 && p.leads(uint16(p.anywhere)) && p.placed+cost <= maxPlaced {
		p.placed += cost
		return uint16(p.anywhere)
	}
	p.anywhere, p.placed = int32(candidate), cost
	return candidate
}

// flush proposes each shard's decided commands as one log entry, except
// those it holds back (hold).
func (p *partition) flush() {
	p.lingerUntil = time.Time{}
	for shard, cmds := range p.open {
		if p.hold(cmds) {
			continue
		}
		delete(p.open, shard)
		var batch []*store.Command
		var live []*pendingCmd
		for _, pc := range cmds {
			if pc.c.Len() == 0 {
				finish(pc, nil) // decided to change nothing
				continue
			}
			p.proposals++
			pc.id = p.proposals
			c := pc.c.Proto()
			c.Node, c.Proposal = p.s.cfg.NodeID, pc.id
			batch = append(batch, &pc.c)
			live = append(live, pc)
		}
		if len(live) == 0 {
			continue
		}
		err := ErrNotLeader
		if p.leads(shard) {
			err = p.propose(shard, batch)
		}
		if err != nil {
			for _, pc := range live {
				finish(pc, err)
			}
			continue
		}
		p.proposed[shard] = append(p.proposed[shard], live...)
	}
}

// maxHeld bounds the commands of a shard that flush holds back.
const maxHeld = 16

// hold reports whether flush holds back a shard's commands, cmds, for the
// next turn, so that more can share their log entry: while every one of
// them may linger, they are fewer than maxHeld, the partition is not
// stopping, and the first of them was held less than Config.OutcomeLinger
// ago. The outcome of an ungrouped task's attempt is such a command: an
// entry, its round of Raft and its applied index then serve several
// fires, at the price of up to the linger before each outcome is durable
// (the task's delivery slot is free already). The linger runs on the
// system's monotonic clock, not Config.Clock: it bounds a batch and
// decides nothing.
func (p *partition) hold(cmds []*pendingCmd) bool {
	linger := p.s.cfg.OutcomeLinger
	if linger <= 0 || p.stopping || len(cmds) >= maxHeld {
		return false
	}
	for _, pc := range cmds {
		if !pc.linger {
			return false
		}
	}
	now := time.Now()
	first := cmds[0]
	if first.until.IsZero() {
		first.until = now.Add(linger)
	}
	if !now.Before(first.until) {
		return false
	}
	if p.lingerUntil.IsZero() || first.until.Before(p.lingerUntil) {
		p.lingerUntil = first.until
	}
	return true
}

// propose proposes cmds as one entry of shard's log, built from the
// encodings their records were checked with when they were added.
func (p *partition) propose(shard uint16, cmds []*store.Command) error {
	data := store.AppendCommands(nil, cmds)
	if checkProposals {
		checkProposal(data, cmds)
	}
	return p.s.node.Propose(shard, data)
}

// checkProposals makes every proposal check that its entry holds what its
// commands' records hold now, that is that no record changed after it was
// added to a command; it panics if not. Tests set it.
//
// A group record is the exception: the partition keeps changing the one
// it holds, and writes (or deletes) it again in each decision that does,
// so only the last write of a group in the entry must hold its record as
// it is now.
var checkProposals = false

func checkProposal(data []byte, cmds []*store.Command) {
	got := &storepb.CommandBatch{}
	if err := proto.Unmarshal(data, got); err != nil {
		panic(fmt.Sprintf("scheduler: decode a proposal: %v", err))
	}
	want := &storepb.CommandBatch{}
	for _, c := range cmds {
		want.Commands = append(want.Commands, proto.CloneOf(c.Proto()))
	}
	dropOverwrittenGroups(got)
	dropOverwrittenGroups(want)
	if !proto.Equal(got, want) {
		panic(fmt.Sprintf("scheduler: a record changed after it was added to a command:\nproposed %v\nnow      %v", got, want))
	}
}

// dropOverwrittenGroups removes from b every group record write that a
// later write or deletion of the same group replaces.
func dropOverwrittenGroups(b *storepb.CommandBatch) {
	name := func(m *storepb.Mutation) (string, bool) {
		if g := m.GetPutGroup(); g != nil {
			return store.GroupRef(g.Client, g.Group), true
		}
		if g := m.GetDeleteGroup(); g != nil {
			return store.GroupRef(g.Client, g.Group), true
		}
		return "", false
	}
	last := map[string]*storepb.Mutation{}
	for _, c := range b.Commands {
		for _, m := range c.Mutations {
			if g, ok := name(m); ok {
				last[g] = m
			}
		}
	}
	for _, c := range b.Commands {
		c.Mutations = slices.DeleteFunc(c.Mutations, func(m *storepb.Mutation) bool {
			g, ok := name(m)
			return ok && m.GetPutGroup() != nil && last[g] != m
		})
	}
}

// undecided reports decisions not yet applied.
func (p *partition) undecided() bool {
	for _, q := range p.open {
		if len(q) > 0 {
			return true
		}
	}
	for _, q := range p.proposed {
		if len(q) > 0 {
			return true
		}
	}
	return false
}

// finish runs a command's continuations.
func finish(pc *pendingCmd, err error) {
	for _, op := range pc.ops {
		op(err)
	}
}

// applyNow applies committed log entries to the state, as every replica
// does, in one unsynced store batch with each shard's applied index, then
// runs the continuations of this node's commands among them.
func (p *partition) applyNow(committed []replica.Committed) {
	b := p.stateBatch()
	var done []*pendingCmd
	err := applyCommitted(b, committed, p.tasks, p.lastID, func(shard uint16, cmd store.EntryCommand) {
		if cmd.Node == p.s.cfg.NodeID {
			if pc := p.applied(shard, cmd.Proposal); pc != nil {
				done = append(done, pc)
			}
		}
	})
	if err == nil {
		err = p.s.cfg.Store.CommitNoSync(b)
	}
	if err != nil {
		p.s.fail(fmt.Errorf("scheduler: apply: %w", err))
		return
	}
	p.tasks.Absorb(b)
	for _, c := range committed {
		last := c.Entries[len(c.Entries)-1].GetIndex()
		p.appliedIndex[c.Shard] = last
		p.s.node.Applied(c.Shard, last)
	}
	for _, pc := range done {
		finish(pc, nil)
	}
}

// applyCommitted applies committed log entries to b, a state batch, with
// each shard's applied index and highest id (lastID, which it updates),
// reading the tasks they change through cache (nil: none). each is called
// with every command applied.
func applyCommitted(b *store.Batch, committed []replica.Committed, cache *store.TaskCache, lastID map[uint16]uint64, each func(uint16, store.EntryCommand)) error {
	entries := make([][]*store.Entry, len(committed))
	var all []*store.Entry
	for i, c := range committed {
		for _, e := range c.Entries {
			entry, err := decodeEntry(c.Shard, e)
			if err != nil {
				return err
			}
			entries[i] = append(entries[i], entry)
			all = append(all, entry)
		}
	}
	if err := b.Prefetch(all, cache); err != nil {
		return err
	}
	noteID := func(shard uint16, id uint64) { lastID[shard] = max(lastID[shard], id) }
	for i, c := range committed {
		for j, e := range c.Entries {
			err := applyCommands(b, c.Shard, e.GetIndex(), entries[i][j], noteID, func(cmd store.EntryCommand) { each(c.Shard, cmd) })
			if err != nil {
				return err
			}
		}
		last := c.Entries[len(c.Entries)-1].GetIndex()
		if err := b.SetApplied(c.Shard, last, lastID[c.Shard]); err != nil {
			return err
		}
	}
	return nil
}

// stateBatch returns the partition's state batch, emptied: one batch
// serves every apply, so that its buffers are allocated once.
func (p *partition) stateBatch() *store.Batch {
	if p.state == nil {
		p.state = p.s.cfg.Store.NewStateBatch()
	} else {
		p.state.Reset()
	}
	return p.state
}

// applyEntry applies one committed log entry of shard to b, a state
// batch: a pure function of the state and the entry, the same on every
// replica and in every replay. Each command applied is passed to each.
func applyEntry(b *store.Batch, shard uint16, e *raftpb.Entry, lastID func(uint16, uint64), each func(store.EntryCommand)) error {
	entry, err := decodeEntry(shard, e)
	if err != nil {
		return err
	}
	return applyCommands(b, shard, e.GetIndex(), entry, lastID, each)
}

// decodeEntry returns the commands of a log entry: none for an entry
// that holds no commands (empty, or a configuration change).
func decodeEntry(shard uint16, e *raftpb.Entry) (*store.Entry, error) {
	if e.GetType() != raftpb.EntryType_EntryNormal || len(e.Data) == 0 {
		return &store.Entry{}, nil
	}
	entry, err := store.DecodeEntry(e.Data)
	if err != nil {
		return nil, fmt.Errorf("shard %d log entry %d: %w", shard, e.GetIndex(), err)
	}
	return entry, nil
}

// applyCommands applies the commands of shard's log entry index to b.
func applyCommands(b *store.Batch, shard uint16, index uint64, entry *store.Entry, lastID func(uint16, uint64), each func(store.EntryCommand)) error {
	if err := b.ApplyEntry(entry, lastID, each); err != nil {
		return fmt.Errorf("shard %d log entry %d: %w", shard, index, err)
	}
	return nil
}

// applied returns this node's command that was just applied, or nil,
// and fails any of the shard's that were proposed before it and dropped
// (a lost leadership).
func (p *partition) applied(shard uint16, proposal uint64) *pendingCmd {
	q := p.proposed[shard]
	for len(q) > 0 && q[0].id < proposal {
		finish(q[0], ErrNotLeader)
		q = q[1:]
	}
	var pc *pendingCmd
	if len(q) > 0 && q[0].id == proposal {
		pc = q[0]
		q = q[1:]
	}
	p.proposed[shard] = q
	return pc
}

// ErrNotLeader: this node does not lead the shard a request is for (or
// stopped leading it while the request was under way, which may or may
// not have taken effect).
var ErrNotLeader = errors.New("scheduler: not the shard's leader")

// NotLeaderError is ErrNotLeader for a request this node refused before
// doing anything, because it does not lead Shard: the shard's leader may
// be asked instead.
type NotLeaderError struct{ Shard uint16 }

func (e *NotLeaderError) Error() string { return ErrNotLeader.Error() }

// Unwrap makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

package store

import (
	"encoding/binary"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Command collects the mutations of one decided change to a shard, to be
// replicated in a log entry (AppendCommands) and then applied to the state
// of every replica (DecodeEntry, Batch.ApplyEntry). Each method checks its
// record as the store would (ids, shards, encoding) and adds nothing when
// it returns an error, so a record that cannot be stored fails its
// decision before anything is proposed.
//
// A mutation is encoded once, when it is added: AppendCommands builds a
// log entry from those encodings. What a record holds when it is added is
// what is proposed; a later change to the record is not.
//
// The zero Command is an empty command of no op (Start sets one); a
// Command must not be copied once used.
type Command struct {
	pb  storepb.Command
	enc []byte // the mutations, encoded as Command fields
}

// NewCommand starts an empty command.
func NewCommand(op storepb.Op) *Command {
	c := new(Command)
	c.Start(op)
	return c
}

// Start makes c an empty command of op, as NewCommand would, reusing
// nothing it held.
func (c *Command) Start(op storepb.Op) {
	c.pb.Reset()
	c.pb.Op, c.enc = op, nil
}

// Proto returns the command record.
func (c *Command) Proto() *storepb.Command { return &c.pb }

// Len returns the number of mutations.
func (c *Command) Len() int { return len(c.pb.Mutations) }

// add encodes m, which fails for a record that cannot be stored (a string
// that is not UTF-8), and adds it.
func (c *Command) add(m *storepb.Mutation) error {
	n := len(c.enc)
	size := proto.Size(m) // and cached in m for the encoding
	c.enc = slices.Grow(c.enc, 1+binary.MaxVarintLen64+size)
	c.enc = protowire.AppendTag(c.enc, mutationsField, protowire.BytesType)
	c.enc = protowire.AppendVarint(c.enc, uint64(size))
	var err error
	if c.enc, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(c.enc, m); err != nil {
		c.enc = c.enc[:n]
		return invalidf("encode %T: %v", m.Change, err)
	}
	c.pb.Mutations = append(c.pb.Mutations, m)
	return nil
}

// Field numbers of storepb.Command and storepb.CommandBatch.
const (
	opField        = 1
	nodeField      = 2
	proposalField  = 3
	mutationsField = 4
	commandsField  = 1 // CommandBatch.commands
)

// AppendCommands appends to dst the encoding of a storepb.CommandBatch of
// cmds, each with the op, node and proposal of its Proto and the
// mutations as they were added.
func AppendCommands(dst []byte, cmds []*Command) []byte {
	size := 0
	for _, c := range cmds {
		size += 1 + binary.MaxVarintLen64 + commandHead + len(c.enc)
	}
	dst = slices.Grow(dst, size)
	for _, c := range cmds {
		var head [commandHead]byte
		h := appendVarintField(head[:0], opField, uint64(c.pb.Op))
		h = appendVarintField(h, nodeField, c.pb.Node)
		h = appendVarintField(h, proposalField, c.pb.Proposal)
		dst = protowire.AppendTag(dst, commandsField, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(len(h)+len(c.enc)))
		dst = append(append(dst, h...), c.enc...)
	}
	return dst
}

// commandHead bounds the encoding of a command's op, node and proposal:
// three varint fields with tags of one byte.
const commandHead = 3 * (1 + binary.MaxVarintLen64)

// appendVarintField appends a varint field, left out when v is zero as
// proto3 leaves it out.
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// PutTask adds a new task.
func (c *Command) PutTask(t *storepb.Task) error {
	if err := checkTaskRecord(t); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_PutTask{PutTask: t}})
}

// ReplaceTask replaces old, as stored, with updated, the same task.
func (c *Command) ReplaceTask(old, updated *storepb.Task) error {
	if err := checkTaskRecord(updated); err != nil {
		return err
	}
	if old.GetId() != updated.Id {
		return invalidf("ReplaceTask of task %#x with task %#x", old.GetId(), updated.Id)
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_ReplaceTask{ReplaceTask: updated}})
}

// DeleteTask deletes t.
func (c *Command) DeleteTask(t *storepb.Task) error {
	if err := checkTaskRecord(t); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_DeleteTask{DeleteTask: t.Id}})
}

// PutGroup writes a group's state.
func (c *Command) PutGroup(g *storepb.Group) error {
	if g == nil {
		return invalidf("PutGroup(nil)")
	}
	if err := checkShard(g.Shard); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_PutGroup{PutGroup: g}})
}

// DeleteGroup deletes a group's state.
func (c *Command) DeleteGroup(shard uint16, client, group string) error {
	if err := checkShard(uint32(shard)); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_DeleteGroup{DeleteGroup: &storepb.GroupName{Shard: uint32(shard), Client: client, Group: group}}})
}

// UnblockGroup removes a group from the index of blocked groups; see
// Batch.PutGroup.
func (c *Command) UnblockGroup(shard uint16, client, group string) error {
	if err := checkShard(uint32(shard)); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_UnblockGroup{UnblockGroup: &storepb.GroupName{Shard: uint32(shard), Client: client, Group: group}}})
}

// PutDeadLetter writes a dead letter.
func (c *Command) PutDeadLetter(d *storepb.DeadLetter) error {
	if err := checkDeadLetterRecord(d); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_PutDeadLetter{PutDeadLetter: d}})
}

// DeleteDeadLetter deletes a dead letter.
func (c *Command) DeleteDeadLetter(d *storepb.DeadLetter) error {
	if err := checkDeadLetterRecord(d); err != nil {
		return err
	}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_DeleteDeadLetter{DeleteDeadLetter: DeadLetterID(d)}})
}

// PutIdempotency remembers that a client's idempotency key created task id
// at createdMs.
func (c *Command) PutIdempotency(shard uint16, client, key string, id uint64, createdMs int64) error {
	if err := checkShard(uint32(shard)); err != nil {
		return err
	}
	if id == 0 {
		return invalidf("PutIdempotency(%q, %q) with task id 0", client, key)
	}
	k := &storepb.IdempotencyKey{Shard: uint32(shard), Client: client, Key: key, Task: id, CreatedMs: createdMs}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_PutIdempotency{PutIdempotency: k}})
}

// DeleteIdempotency forgets an idempotency key filed at createdMs.
func (c *Command) DeleteIdempotency(shard uint16, client, key string, createdMs int64) error {
	if err := checkShard(uint32(shard)); err != nil {
		return err
	}
	k := &storepb.IdempotencyKey{Shard: uint32(shard), Client: client, Key: key, CreatedMs: createdMs}
	return c.add(&storepb.Mutation{Change: &storepb.Mutation_DeleteIdempotency{DeleteIdempotency: k}})
}

func checkTaskRecord(t *storepb.Task) error {
	if t == nil {
		return invalidf("nil task")
	}
	return checkTaskID(t.Id)
}

func checkTaskID(id uint64) error {
	switch {
	case id == 0:
		return invalidf("task id 0")
	case ShardOf(id) >= MaxShards:
		return invalidf("task id %#x has shard %d >= %d", id, ShardOf(id), MaxShards)
	}
	return nil
}

func checkDeadLetterRecord(d *storepb.DeadLetter) error {
	if err := checkTaskRecord(d.GetTask()); err != nil {
		return err
	}
	if d.Id != 0 && ShardOf(d.Id) != ShardOf(d.Task.Id) {
		return invalidf("dead letter %#x is not in the shard of its task %#x", d.Id, d.Task.Id)
	}
	return nil
}

// errMissing is an applied mutation whose old record is not in the state:
// the replicas' states disagree, which is corruption.
var errMissing = fmt.Errorf("%w: a record a command changes is missing", ErrCorrupt)

// ApplyEntry writes a log entry's commands into b, a state batch, in
// order, reading the old values of replaced and deleted records through
// it. It depends only on the state and the entry, so every replica, and
// every replay of the log, makes the same change. It reports the ids the
// commands put to lastID, and each command, once applied, to each.
func (b *Batch) ApplyEntry(e *Entry, lastID func(shard uint16, id uint64), each func(EntryCommand)) error {
	for _, c := range e.Commands {
		for _, m := range c.muts {
			var err error
			switch {
			case m.put != nil:
				lastID(ShardOf(m.put.keys.id), m.put.keys.id)
				err = b.putEncodedTask(m.put)
			case m.group != nil:
				err = b.putEncodedGroup(m.group)
			default:
				err = b.applyMutation(m.m, lastID)
			}
			if err != nil {
				return fmt.Errorf("store: apply %v command: %w", c.Op, err)
			}
		}
		each(c)
	}
	return nil
}

func (b *Batch) applyMutation(m *storepb.Mutation, lastID func(uint16, uint64)) error {
	switch c := m.Change.(type) {
	case *storepb.Mutation_PutTask:
		lastID(ShardOf(c.PutTask.Id), c.PutTask.Id)
		return b.PutTask(c.PutTask)
	case *storepb.Mutation_ReplaceTask:
		old, _, err := b.task(c.ReplaceTask.Id)
		if err != nil {
			return err
		}
		return b.ReplaceTask(old, c.ReplaceTask)
	case *storepb.Mutation_DeleteTask:
		old, once, err := b.task(c.DeleteTask)
		if err != nil {
			return err
		}
		return b.deleteTask(old, once)
	case *storepb.Mutation_PutGroup:
		return b.PutGroup(c.PutGroup)
	case *storepb.Mutation_DeleteGroup:
		g := c.DeleteGroup
		return b.DeleteGroup(uint16(g.Shard), g.Client, g.Group)
	case *storepb.Mutation_UnblockGroup:
		g := c.UnblockGroup
		return b.UnblockGroup(uint16(g.Shard), g.Client, g.Group)
	case *storepb.Mutation_PutDeadLetter:
		lastID(ShardOf(DeadLetterID(c.PutDeadLetter)), DeadLetterID(c.PutDeadLetter))
		return b.PutDeadLetter(c.PutDeadLetter)
	case *storepb.Mutation_DeleteDeadLetter:
		old, err := b.deadLetter(c.DeleteDeadLetter)
		if err != nil {
			return err
		}
		return b.DeleteDeadLetter(old)
	case *storepb.Mutation_PutIdempotency:
		k := c.PutIdempotency
		return b.PutIdempotency(uint16(k.Shard), k.Client, k.Key, k.Task, k.CreatedMs)
	case *storepb.Mutation_DeleteIdempotency:
		k := c.DeleteIdempotency
		return b.DeleteIdempotency(uint16(k.Shard), k.Client, k.Key, k.CreatedMs)
	}
	return invalidf("unknown mutation %T", m.Change)
}

// SetApplied records, in the same batch as the state it covers, that a
// shard's state includes its log up to applied, and the highest id issued
// in it.
func (b *Batch) SetApplied(shard uint16, applied, lastID uint64) error {
	return b.PutShardMeta(shard, &storepb.ShardMeta{LastId: CounterOf(lastID), Applied: applied})
}

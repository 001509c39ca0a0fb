package store

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Command collects the mutations of one decided change to a shard, to be
// replicated and then applied to the state of every replica with
// Batch.Apply. Each method checks its record as the store would (ids,
// shards, encoding) and adds nothing when it returns an error, so a record
// that cannot be stored fails its decision before anything is proposed.
type Command struct {
	pb  *storepb.Command
	buf []byte
}

// NewCommand starts an empty command.
func NewCommand(op storepb.Op) *Command { return &Command{pb: &storepb.Command{Op: op}} }

// Proto returns the command record.
func (c *Command) Proto() *storepb.Command { return c.pb }

// Len returns the number of mutations.
func (c *Command) Len() int { return len(c.pb.Mutations) }

func (c *Command) add(m *storepb.Mutation) error {
	c.pb.Mutations = append(c.pb.Mutations, m)
	return nil
}

// encodes checks that m can be stored.
func (c *Command) encodes(m proto.Message) error {
	var err error
	if c.buf, err = (proto.MarshalOptions{}).MarshalAppend(c.buf[:0], m); err != nil {
		return invalidf("encode %T: %v", m, err)
	}
	return nil
}

// PutTask adds a new task.
func (c *Command) PutTask(t *storepb.Task) error {
	if err := checkTaskRecord(t); err != nil {
		return err
	}
	if err := c.encodes(t); err != nil {
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
	if err := c.encodes(updated); err != nil {
		return err
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
	if err := c.encodes(g); err != nil {
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
	if err := c.encodes(d); err != nil {
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
	if err := c.encodes(k); err != nil {
		return err
	}
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
	switch {
	case t == nil:
		return invalidf("nil task")
	case t.Id == 0:
		return invalidf("task id 0")
	case ShardOf(t.Id) >= MaxShards:
		return invalidf("task id %#x has shard %d >= %d", t.Id, ShardOf(t.Id), MaxShards)
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

// Apply writes a command's mutations into b, a state batch, reading the
// old values of replaced and deleted records through it. It depends only
// on the state and the command, so every replica, and every replay of
// the log, makes the same change. It reports the highest id the command
// put in each shard it touched.
func (b *Batch) Apply(cmd *storepb.Command, lastID func(shard uint16, id uint64)) error {
	for _, m := range cmd.Mutations {
		if err := b.applyMutation(m, lastID); err != nil {
			return fmt.Errorf("store: apply %v command: %w", cmd.Op, err)
		}
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

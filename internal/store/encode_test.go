package store

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TestAppendCommandsDecodes builds random commands of every kind of
// mutation and checks that the entry AppendCommands makes of them decodes
// to exactly their records.
func TestAppendCommandsDecodes(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		cmds := randomCommands(rt)
		want := &storepb.CommandBatch{}
		for _, c := range cmds {
			want.Commands = append(want.Commands, c.Proto())
		}
		var got storepb.CommandBatch
		if err := proto.Unmarshal(AppendCommands(nil, cmds), &got); err != nil {
			rt.Fatal(err)
		}
		if !proto.Equal(&got, want) {
			rt.Fatalf("decoded %v\nwant    %v", &got, want)
		}
	})
}

// randomCommands returns up to four commands of random ops, nodes,
// proposals and mutations of every kind.
func randomCommands(rt *rapid.T) []*Command {
	var cmds []*Command
	for range rapid.IntRange(0, 4).Draw(rt, "commands") {
		c := NewCommand(storepb.Op(rapid.IntRange(0, 9).Draw(rt, "op")))
		c.Proto().Node = rapid.Uint64().Draw(rt, "node")
		c.Proto().Proposal = rapid.Uint64().Draw(rt, "proposal")
		for range rapid.IntRange(0, 5).Draw(rt, "mutations") {
			must(rt, addMutation(rt, c))
		}
		cmds = append(cmds, c)
	}
	return cmds
}

func addMutation(rt *rapid.T, c *Command) error {
	shard := rapid.Uint16Range(0, MaxShards-1).Draw(rt, "shard")
	id := MakeID(shard, rapid.Uint64Range(1, 1<<40).Draw(rt, "counter"))
	str := func(label string) string { return rapid.StringMatching(`[a-z\x{e9}]{0,8}`).Draw(rt, label) }
	task := &storepb.Task{Id: id, Client: str("client"), Group: str("group"), Payload: rapid.SliceOf(rapid.Byte()).Draw(rt, "payload"),
		DueMs: rapid.Int64().Draw(rt, "due"), Seq: rapid.Uint64().Draw(rt, "seq"), Attempts: rapid.Uint32().Draw(rt, "attempts")}
	switch rapid.IntRange(0, 9).Draw(rt, "mutation") {
	case 0:
		return c.PutTask(task)
	case 1:
		return c.ReplaceTask(task, task)
	case 2:
		return c.DeleteTask(task)
	case 3:
		return c.PutGroup(&storepb.Group{Shard: uint32(shard), Client: task.Client, Group: task.Group, Tasks: task.Seq, RecentStartsMs: []int64{task.DueMs},
			BlockedTask: rapid.SampledFrom([]uint64{0, id}).Draw(rt, "blocked")})
	case 4:
		return c.DeleteGroup(shard, task.Client, task.Group)
	case 5:
		return c.UnblockGroup(shard, task.Client, task.Group)
	case 6:
		return c.PutDeadLetter(&storepb.DeadLetter{Id: id, Task: task, LastError: str("error"), Attempts: task.Attempts})
	case 7:
		return c.DeleteDeadLetter(&storepb.DeadLetter{Id: id, Task: task})
	case 8:
		return c.PutIdempotency(shard, task.Client, str("key"), id, task.DueMs)
	default:
		return c.DeleteIdempotency(shard, task.Client, str("key"), task.DueMs)
	}
}

// TestCommandRefusesWhatCannotBeEncoded: a record with a string that is
// not UTF-8 fails when it is added, whatever the mutation, and leaves the
// command as it was.
func TestCommandRefusesWhatCannotBeEncoded(t *testing.T) {
	t.Parallel()
	bad := "\xff"
	task := &storepb.Task{Id: MakeID(1, 1), Client: "a"}
	for name, add := range map[string]func(c *Command) error{
		"put task":          func(c *Command) error { return c.PutTask(&storepb.Task{Id: task.Id, Client: bad}) },
		"replace task":      func(c *Command) error { return c.ReplaceTask(task, &storepb.Task{Id: task.Id, Group: bad}) },
		"put group":         func(c *Command) error { return c.PutGroup(&storepb.Group{Shard: 1, Client: "a", Group: bad}) },
		"delete group":      func(c *Command) error { return c.DeleteGroup(1, bad, "g") },
		"unblock group":     func(c *Command) error { return c.UnblockGroup(1, "a", bad) },
		"put dead letter":   func(c *Command) error { return c.PutDeadLetter(&storepb.DeadLetter{Task: task, LastError: bad}) },
		"put idempotency":   func(c *Command) error { return c.PutIdempotency(1, "a", bad, task.Id, 0) },
		"delete idempotent": func(c *Command) error { return c.DeleteIdempotency(1, bad, "k", 0) },
	} {
		c := NewCommand(storepb.Op_OP_REGISTER)
		must(t, c.PutTask(task))
		before := AppendCommands(nil, []*Command{c})
		err := add(c)
		if err == nil || !strings.Contains(err.Error(), "encode") {
			t.Errorf("%s: got %v, want an encoding error", name, err)
		}
		if c.Len() != 1 || string(AppendCommands(nil, []*Command{c})) != string(before) {
			t.Errorf("%s: the refused mutation was kept", name)
		}
	}
}

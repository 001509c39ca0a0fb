package store

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Entry is a log entry's commands (a storepb.CommandBatch) as ApplyEntry
// takes them. A task or group record that a command puts stays as the
// entry encodes it, with only the fields its keys need read out: applying
// it writes those bytes, so a registration costs no decode and no second
// encode of its records on any replica. Every other mutation is decoded.
type Entry struct {
	Commands []EntryCommand
}

// EntryCommand is one command of an Entry: who proposed it, and its
// mutations.
type EntryCommand struct {
	Op       storepb.Op
	Node     uint64 // the proposing node
	Proposal uint64 // the proposal's number on that node
	muts     []entryMutation
}

// entryMutation is a put of an encoded task (put) or group (group), or
// any other mutation decoded (m).
type entryMutation struct {
	put   *encodedTask
	group *encodedGroup
	m     *storepb.Mutation
}

// encodedGroup is a group record as encoded, and the fields of it that
// its keys are made of.
type encodedGroup struct {
	enc           []byte
	shard         uint32
	client, group string
	blocked       bool // it has a blocked task
}

// encodedTask is a task record as encoded, and the fields of it that its
// index entries are made of.
type encodedTask struct {
	enc  []byte
	keys taskKeys
}

// Field numbers of storepb.Mutation, storepb.Task and storepb.Group read
// here.
const (
	putTaskField     = 1 // Mutation.put_task
	putGroupField    = 4 // Mutation.put_group
	groupShardField  = 1
	groupClientField = 2
	groupGroupField  = 3
	groupBlockField  = 5
	taskIDField      = 1
	taskClientField  = 2
	taskGroupField   = 3
	taskDueField     = 5
	taskSeqField     = 7
	taskModeField    = 8
	taskNextField    = 13
	taskReplaceField = 21
)

// DecodeEntry decodes a log entry's data. Data that is not a well-formed
// CommandBatch is ErrCorrupt.
func DecodeEntry(data []byte) (*Entry, error) {
	e := &Entry{}
	err := eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != commandsField || typ != protowire.BytesType {
			return nil // unknown to this build: as proto.Unmarshal, ignored
		}
		c, err := decodeEntryCommand(v)
		if err != nil {
			return err
		}
		e.Commands = append(e.Commands, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: log entry: %v", ErrCorrupt, err)
	}
	return e, nil
}

func decodeEntryCommand(data []byte) (EntryCommand, error) {
	var c EntryCommand
	err := eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == opField && typ == protowire.VarintType:
			c.Op = storepb.Op(int32(n))
		case num == nodeField && typ == protowire.VarintType:
			c.Node = n
		case num == proposalField && typ == protowire.VarintType:
			c.Proposal = n
		case num == mutationsField && typ == protowire.BytesType:
			m, err := decodeEntryMutation(v)
			if err != nil {
				return err
			}
			c.muts = append(c.muts, m)
		}
		return nil
	})
	return c, err
}

// decodeEntryMutation keeps a mutation that is a put_task or a put_group
// and nothing else as its encoded record; any other is decoded.
func decodeEntryMutation(data []byte) (entryMutation, error) {
	num, typ, n := protowire.ConsumeTag(data)
	if n > 0 && (num == putTaskField || num == putGroupField) && typ == protowire.BytesType {
		enc, m := protowire.ConsumeBytes(data[n:])
		if m > 0 && n+m == len(data) {
			if num == putGroupField {
				g, err := readGroupKeys(enc)
				return entryMutation{group: g}, err
			}
			keys, err := readTaskKeys(enc)
			if err != nil {
				return entryMutation{}, err
			}
			return entryMutation{put: &encodedTask{enc: enc, keys: keys}}, nil
		}
	}
	m := new(storepb.Mutation)
	if err := proto.Unmarshal(data, m); err != nil {
		return entryMutation{}, err
	}
	return entryMutation{m: m}, nil
}

// readTaskKeys reads the fields of an encoded task that its index
// entries are made of; as in proto.Unmarshal, the last of a repeated
// field wins and the strings must be UTF-8.
func readTaskKeys(enc []byte) (taskKeys, error) {
	var k taskKeys
	var mode storepb.DispatchMode
	err := eachField(enc, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		// A field of another wire type than its own is, to
		// proto.Unmarshal, an unknown field.
		if typ == protowire.BytesType {
			switch num {
			case taskClientField:
				return readString(&k.client, "task", num, v)
			case taskGroupField:
				return readString(&k.group, "task", num, v)
			case taskReplaceField:
				return readString(&k.replaceKey, "task", num, v)
			}
			return nil
		}
		switch num {
		case taskIDField:
			k.id = n
		case taskDueField:
			k.due = int64(n)
		case taskSeqField:
			k.seq = n
		case taskModeField:
			mode = storepb.DispatchMode(int32(n))
		case taskNextField:
			k.nextAttempt = int64(n)
		}
		return nil
	})
	k.ordered = k.group != "" && mode != storepb.DispatchMode_DISPATCH_MODE_IMMEDIATE
	return k, err
}

// readGroupKeys reads the fields of an encoded group record that its keys
// are made of, as readTaskKeys does a task's.
func readGroupKeys(enc []byte) (*encodedGroup, error) {
	g := &encodedGroup{enc: enc}
	err := eachField(enc, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		if typ == protowire.BytesType {
			switch num {
			case groupClientField:
				return readString(&g.client, "group", num, v)
			case groupGroupField:
				return readString(&g.group, "group", num, v)
			}
			return nil
		}
		switch num {
		case groupShardField:
			g.shard = uint32(n)
		case groupBlockField:
			g.blocked = n != 0
		}
		return nil
	})
	return g, err
}

// readString sets *s to a string field's value, which must be UTF-8.
func readString(s *string, record string, num protowire.Number, v []byte) error {
	if !utf8.Valid(v) {
		return fmt.Errorf("%s field %d is not UTF-8", record, num)
	}
	*s = string(v)
	return nil
}

// eachField calls fn with every field of an encoded message in order: its
// number and type, its bytes for a length-delimited field, its value for
// a varint. Other types are skipped.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType || typ == protowire.VarintType {
			if err := fn(num, typ, v, x); err != nil {
				return err
			}
		}
	}
	return nil
}

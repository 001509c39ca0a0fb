package store

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TestDecodeEntryMatchesUnmarshal builds entries of random commands of
// every kind of mutation and checks that DecodeEntry reads what
// proto.Unmarshal reads: the same commands, each put task's bytes
// decoding to its record, and its index fields the record's; the same for
// a put group.
func TestDecodeEntryMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		checkDecodeEntry(rt, AppendCommands(nil, randomCommands(rt)))
	})
}

// FuzzDecodeEntry: whatever the bytes, DecodeEntry does not panic, and
// what proto.Unmarshal accepts as a CommandBatch it reads the same way.
// (It may accept more: a task's bytes are kept, not all decoded, so damage
// inside them is found when the record is read.)
func FuzzDecodeEntry(f *testing.F) {
	c := NewCommand(storepb.Op_OP_REGISTER)
	_ = c.PutTask(&storepb.Task{Id: MakeID(3, 7), Client: "a", Group: "g", DueMs: 5, Seq: 7, Payload: []byte("p"), ReplaceKey: "k"})
	_ = c.DeleteTask(&storepb.Task{Id: MakeID(3, 6)})
	f.Add(AppendCommands(nil, []*Command{c}))
	f.Add([]byte{0x0a, 0x02, 0x22, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		var want storepb.CommandBatch
		if proto.Unmarshal(data, &want) != nil {
			_, _ = DecodeEntry(data)
			return
		}
		checkDecodeEntry(t, data)
	})
}

func checkDecodeEntry(t interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}, data []byte) {
	t.Helper()
	var want storepb.CommandBatch
	if err := proto.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEntry(data)
	if err != nil {
		t.Fatalf("DecodeEntry: %v", err)
	}
	if len(got.Commands) != len(want.Commands) {
		t.Fatalf("%d commands, want %d", len(got.Commands), len(want.Commands))
	}
	for i, w := range want.Commands {
		g := got.Commands[i]
		if g.Op != w.Op || g.Node != w.Node || g.Proposal != w.Proposal || len(g.muts) != len(w.Mutations) {
			t.Fatalf("command %d: %v %d %d with %d mutations, want %v", i, g.Op, g.Node, g.Proposal, len(g.muts), w)
		}
		for j, wm := range w.Mutations {
			gm := g.muts[j]
			if gm.group != nil {
				rec := new(storepb.Group)
				if err := proto.Unmarshal(gm.group.enc, rec); err != nil || !proto.Equal(rec, wm.GetPutGroup()) {
					t.Fatalf("command %d mutation %d: put %v (%v), want %v", i, j, rec, err, wm)
				}
				keys := encodedGroup{enc: gm.group.enc, shard: rec.Shard, client: rec.Client, group: rec.Group, blocked: rec.BlockedTask != 0}
				if !reflect.DeepEqual(*gm.group, keys) {
					t.Fatalf("command %d mutation %d: key fields %+v, want %+v", i, j, *gm.group, keys)
				}
				continue
			}
			if gm.m != nil {
				if !proto.Equal(gm.m, wm) {
					t.Fatalf("command %d mutation %d: %v, want %v", i, j, gm.m, wm)
				}
				continue
			}
			task := new(storepb.Task)
			if err := proto.Unmarshal(gm.put.enc, task); err != nil || !proto.Equal(task, wm.GetPutTask()) {
				t.Fatalf("command %d mutation %d: put %v (%v), want %v", i, j, task, err, wm)
			}
			if gm.put.keys != keysOf(task) {
				t.Fatalf("command %d mutation %d: index fields %+v, want %+v", i, j, gm.put.keys, keysOf(task))
			}
		}
	}
}

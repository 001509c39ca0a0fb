package store

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// BenchmarkEncodeRegistrations builds a log entry of 64 registrations
// (a task with a 256-byte payload and its group's record each), as a
// partition does in a loop turn: how=append is the store's way, from the
// encodings the records were checked with; how=marshal, the baseline,
// marshals the commands' records again as one CommandBatch.
func BenchmarkEncodeRegistrations(b *testing.B) {
	payload := make([]byte, 256)
	for _, how := range []string{"marshal", "append"} {
		b.Run("how="+how, func(b *testing.B) {
			b.ReportAllocs()
			var data []byte
			for i := range b.N {
				cmds := make([]*Command, 64)
				for j := range cmds {
					c := NewCommand(storepb.Op_OP_REGISTER)
					id := MakeID(7, uint64(i*64+j+1))
					group := fmt.Sprint("group-", j)
					must(b, c.PutTask(&storepb.Task{Id: id, Client: "bench", Group: group, Payload: payload, DueMs: 1 << 40, Seq: id, CreatedMs: 1 << 40}))
					must(b, c.PutGroup(&storepb.Group{Shard: 7, Client: "bench", Group: group, Tasks: uint64(i)}))
					c.Proto().Node, c.Proto().Proposal = 1, uint64(i*64+j)
					cmds[j] = c
				}
				if how == "append" {
					data = AppendCommands(data[:0], cmds)
					continue
				}
				batch := &storepb.CommandBatch{}
				for _, c := range cmds {
					batch.Commands = append(batch.Commands, c.Proto())
				}
				var err error
				if data, err = (proto.MarshalOptions{}).MarshalAppend(data[:0], batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// BenchmarkApplyRegistrations applies registrations as the scheduler
// does, each command a log entry decoded first: commands of 256
// registrations each (a task with a 256-byte
// payload in one of 1,000 groups over 32 shards, and its group's
// record), 4 commands to a state batch, committed without a sync. The
// store grows by b.N tasks. order=written adds the batch's keys to Pebble
// in the order the commands wrote them, the baseline; order=sorted is the
// store's way.
func BenchmarkApplyRegistrations(b *testing.B) {
	for _, sorted := range []bool{false, true} {
		name := "order=written"
		if sorted {
			name = "order=sorted"
		}
		b.Run(name, func(b *testing.B) {
			sortHeldWrites = sorted
			defer func() { sortHeldWrites = true }()
			benchApply(b)
		})
	}
}

func benchApply(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const perCommand, perBatch, groups, shards = 256, 4, 1000, 32
	payload := make([]byte, 256)
	due := time.Now().Add(24 * time.Hour).UnixMilli()
	counters := make([]uint64, shards)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	begin := time.Now()
	for n := 0; n < b.N; {
		batch := s.NewStateBatch()
		for range perBatch {
			c := NewCommand(storepb.Op_OP_REGISTER)
			for range perCommand {
				g := n % groups
				shard := uint16(g % shards)
				counters[shard]++
				group := fmt.Sprintf("group-%d", g)
				t := &storepb.Task{Id: MakeID(shard, counters[shard]), Client: "bench", Group: group, Payload: payload, DueMs: due + int64(n), Seq: uint64(n)}
				if err := firstErr(c.PutTask(t), c.PutGroup(&storepb.Group{Shard: uint32(shard), Client: "bench", Group: group, Tasks: uint64(n)})); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := applyCommand(batch, c); err != nil {
				b.Fatal(err)
			}
		}
		for shard := range uint16(shards) {
			if err := batch.SetApplied(shard, uint64(n), MakeID(shard, counters[shard])); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.CommitNoSync(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "tasks/s")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

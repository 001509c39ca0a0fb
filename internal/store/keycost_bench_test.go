package store

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkKeyCost is what Pebble alone charges to keep a pending task:
// b.N tasks (a 300-byte record each, 64 shards, due a day ahead) are
// written without a sync in batches, then flushed, and the compactions
// they caused are let finish; it reports the process's CPU time per task,
// flushes and compactions included. layout=record+due+client is the
// store's for an ungrouped task (a grouped one adds its order entry and
// group record); record-only is one key per task; blob is one key per 64
// tasks, the cost of the bytes alone. batch is how many tasks a batch
// holds: 64 as a loop turn's apply, 65,536 as a checkpoint would.
func BenchmarkKeyCost(b *testing.B) {
	for _, layout := range []string{"record+due+client", "record-only", "blob"} {
		for _, batch := range []int{64, 65536} {
			b.Run(fmt.Sprintf("layout=%s/batch=%d", layout, batch), func(b *testing.B) {
				benchKeyCost(b, layout, batch)
			})
		}
	}
}

func benchKeyCost(b *testing.B, layout string, perBatch int) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	record := make([]byte, 300)
	due := time.Now().Add(24 * time.Hour).UnixMilli()
	b.ResetTimer()
	before := cpuTime()
	sb := s.NewStateBatch() // held writes, added to Pebble sorted by key
	var blob []byte
	for i := range b.N {
		shard := uint16(i % 64)
		id := MakeID(shard, uint64(i/64+1))
		switch layout {
		case "blob":
			if blob = append(blob, record...); len(blob) >= 64*len(record) {
				sb.set(binary.BigEndian.AppendUint64(shardPrefix('z', shard), id), blob)
				blob = blob[:0]
			}
		case "record-only":
			sb.set(taskKey(id), record)
		default:
			sb.set(taskKey(id), record)
			sb.set(dueKey(due+int64(i/1000), id), nil)
			sb.set(clientIndexKey(tagClientIndex, "bench", id), nil)
		}
		if (i+1)%perBatch == 0 || i == b.N-1 {
			sb.count++ // the writes above bypass the methods that count
			if err := s.CommitNoSync(sb); err != nil {
				b.Fatal(err)
			}
			sb = s.NewStateBatch()
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	for quiet := 0; quiet < 20; { // 200 ms without a compaction
		time.Sleep(10 * time.Millisecond)
		if s.db.Metrics().Compact.NumInProgress == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/task")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package replica

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkReplication commits b.N entries of 128 bytes through three
// replicas of 8 shards, a window of proposals on every shard at a time,
// over each transport: the in-process network is the baseline for TCP
// and TLS on loopback. It reports committed entries/s, what the nodes
// sent (messages/s and MB/s of Raft messages, before framing), and the
// CPU time the process spent per entry, which a busy machine disturbs
// less than throughput.
func BenchmarkReplication(b *testing.B) {
	const window = 128 // proposals in flight per shard
	for _, tn := range networks {
		b.Run(tn.name, func(b *testing.B) {
			nw := tn.new(b)
			defer nw.close()
			// Ticks long enough that a loaded machine's late heartbeats do
			// not call elections in the middle of the run.
			c := startCluster(b, nw, shards, func(cfg *Config) { cfg.Tick = 50 * time.Millisecond })
			defer c.stop()
			c.commit("warmup", 10)
			leaders := make(map[uint16]*replica)
			for _, sh := range shards {
				leaders[sh] = c.leader(sh)
			}
			msgs0, bytes0 := nw.traffic()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				round := min(window*len(shards), b.N-done)
				target := make(map[uint16]int)
				for _, sh := range shards {
					target[sh] = leaders[sh].rec.count(sh)
				}
				for i := range round {
					sh := shards[i%len(shards)]
					data := make([]byte, 128)
					copy(data, fmt.Sprintf("entry-%d", done+i))
					if err := leaders[sh].node.Propose(sh, data); err != nil {
						b.Fatal(err)
					}
					target[sh]++
				}
				for sh, l := range leaders {
					l.rec.await(b, "the round committed", func() bool {
						return len(l.rec.applied[sh]) >= target[sh] || l.rec.lead[sh] == 0
					})
					if l.rec.count(sh) < target[sh] {
						b.Fatalf("shard %d changed leaders during the run", sh)
					}
				}
				done += round
			}
			elapsed := time.Since(start).Seconds()
			b.StopTimer()
			cpu := cpuTime(b) - cpu0
			msgs, bytes := nw.traffic()
			b.ReportMetric(float64(b.N)/elapsed, "entries/s")
			b.ReportMetric(float64(msgs-msgs0)/elapsed, "msgs/s")
			b.ReportMetric(float64(bytes-bytes0)/elapsed/1e6, "MB/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/entry")
		})
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package oms

import (
	"flag"
	"strings"

	"github.com/boomerangd/boomerang/dispatch"
)

// RegisterFlags binds c's fields to command-line flags in fs, with the
// defaults of cmd/minioms.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "TCP address to listen on; port 0 picks a free port")
	fs.IntVar(&c.Partitions, "partitions", 0, "partitions, a power of two (0: GOMAXPROCS rounded up)")
	fs.IntVar(&c.RingSize, "ring", dispatch.DefaultRingSize, "ring size per partition, a power of two; a full ring answers REJ BUSY")
	fs.IntVar(&c.Workers, "workers", dispatch.DefaultWorkers, "worker goroutines per partition")
	fs.IntVar(&c.MaxQueued, "max-queued", dispatch.DefaultMaxQueued, "orders a partition may have waiting before it stops taking from its ring")
	fs.IntVar(&c.MaxPending, "max-pending", 0, "orders one account may have waiting before REJ GROUP_FULL (0: no bound)")
	fs.DurationVar(&c.ExecMin, "exec-min", DefaultExecMin, "shortest simulated execution of an accepted order")
	fs.DurationVar(&c.ExecMax, "exec-max", DefaultExecMax, "longest simulated execution (0: execute at once)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the execution times")
	fs.DurationVar(&c.StatsInterval, "stats-interval", DefaultStatsInterval, "how often to log per-partition counters (0: never)")
	fs.IntVar(&c.MaxFrame, "max-frame", DefaultMaxFrame, "largest order frame in bytes; a larger one closes the connection")
	fs.IntVar(&c.OutboxLimit, "outbox", DefaultOutboxLimit, "responses queued per connection before it is dropped as a slow consumer")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", DefaultWriteTimeout, "how long one write to a client may block before it is dropped")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", DefaultDrainTimeout, "on shutdown, how long accepted orders may still run")
	fs.Int64Var(&c.Risk.MaxQuantity, "max-qty", DefaultMaxQuantity, "risk: largest quantity of one order")
	fs.Int64Var(&c.Risk.MaxNotional, "max-notional", DefaultMaxNotional, "risk: largest quantity × price, in cents")
	fs.Int64Var(&c.Risk.PriceBandBps, "price-band-bps", DefaultPriceBandBps, "risk: largest distance of a price from its reference, in basis points")
	fs.Func("halt", "risk: comma-separated symbols to halt (default "+DefaultHaltedSymbol+"; empty halts none)", func(v string) error {
		c.Risk.Halted = []string{}
		for sym := range strings.SplitSeq(v, ",") {
			if sym = strings.TrimSpace(sym); sym != "" {
				c.Risk.Halted = append(c.Risk.Halted, sym)
			}
		}
		return nil
	})
}

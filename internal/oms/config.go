package oms

import (
	"fmt"
	"net"
	"time"

	"github.com/boomerangd/boomerang/dispatch"
)

// Defaults for Config fields left at zero, and for the flags of
// cmd/minioms.
const (
	// DefaultListen is the address cmd/minioms listens on.
	DefaultListen = "127.0.0.1:7090"
	// DefaultExecMin and DefaultExecMax bound the simulated execution time
	// cmd/minioms uses unless told otherwise.
	DefaultExecMin = 10 * time.Millisecond
	DefaultExecMax = 20 * time.Millisecond
	// DefaultStatsInterval is how often cmd/minioms logs its counters.
	DefaultStatsInterval = 5 * time.Second
	// DefaultMaxFrame is the largest order frame accepted, in bytes. An
	// order is about 50 bytes.
	DefaultMaxFrame = 4096
	// DefaultOutboxLimit is how many responses may wait for one
	// connection's writer before the connection counts as a slow consumer.
	DefaultOutboxLimit = 65536
	// DefaultWriteTimeout is how long one write to a client may block.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultCloseLinger is how long a closing connection keeps reading
	// (and discarding) after its last response, so the peer reads every
	// response before the socket goes away.
	DefaultCloseLinger = time.Second
	// DefaultDrainTimeout bounds how long Stop waits for accepted orders
	// to run before answering the rest with REJ SHUTTING_DOWN.
	DefaultDrainTimeout = 30 * time.Second
)

// Config configures a Server. Zero fields take the defaults above unless
// their comment says otherwise.
type Config struct {
	// Listen is the TCP address to listen on; port 0 picks a free port
	// (see Server.Addr). Default DefaultListen.
	Listen string

	// Partitions, RingSize, Workers and MaxQueued configure the dispatch
	// engine (see dispatch.Config). A full ring answers REJ BUSY, and a
	// partition with MaxQueued orders waiting stops taking from its ring,
	// so it soon answers REJ BUSY too. Defaults: GOMAXPROCS rounded up to a
	// power of two, dispatch.DefaultRingSize, dispatch.DefaultWorkers,
	// dispatch.DefaultMaxQueued.
	Partitions int
	RingSize   int
	Workers    int
	MaxQueued  int

	// MaxPending bounds the orders of one correlation id that wait behind
	// its running order; beyond it orders are answered REJ GROUP_FULL.
	// Zero means no per-account bound (the per-partition bound of the
	// engine still holds, and answers REJ BUSY).
	MaxPending int

	// ExecMin and ExecMax bound the simulated execution time of an
	// accepted order (stage 3), drawn per order from Seed. Zero is taken
	// literally: ExecMax 0 executes at once, on the worker. cmd/minioms
	// uses DefaultExecMin and DefaultExecMax.
	ExecMin, ExecMax time.Duration

	// Seed makes execution times reproducible: an order's time is a hash
	// of Seed and the order's ids, the same whatever the interleaving.
	Seed uint64

	// Risk holds the limits of stage 2.
	Risk RiskConfig

	// StatsInterval is how often the per-partition counters are logged.
	// Zero disables the periodic lines.
	StatsInterval time.Duration

	// MaxFrame is the largest order frame accepted, in bytes; a larger
	// length prefix closes the connection. Default DefaultMaxFrame.
	MaxFrame int

	// OutboxLimit bounds the responses waiting for one connection's
	// writer. A client that falls this far behind is disconnected and its
	// remaining responses are dropped. Default DefaultOutboxLimit.
	OutboxLimit int

	// WriteTimeout bounds one write to a client; a client that accepts no
	// bytes for this long is disconnected. Default DefaultWriteTimeout.
	WriteTimeout time.Duration

	// CloseLinger bounds how long a closing connection discards input
	// after its last response. Default DefaultCloseLinger.
	CloseLinger time.Duration

	// DrainTimeout bounds how long Stop lets accepted orders run; the
	// orders still waiting after it are answered REJ SHUTTING_DOWN.
	// Default DefaultDrainTimeout.
	DrainTimeout time.Duration

	// Clock supplies time to the server: timestamps and execution timers.
	// Default: the system clock.
	Clock Clock

	// beforeStages, set only by tests, runs on the worker at the start of
	// every order's pipeline.
	beforeStages func(o *order)

	// onConnect, set only by tests, runs on every accepted connection
	// before it is served.
	onConnect func(nc net.Conn)
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.RingSize == 0 {
		c.RingSize = dispatch.DefaultRingSize
	}
	if c.Workers == 0 {
		c.Workers = dispatch.DefaultWorkers
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.OutboxLimit == 0 {
		c.OutboxLimit = DefaultOutboxLimit
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.CloseLinger == 0 {
		c.CloseLinger = DefaultCloseLinger
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	c.Risk.setDefaults()
}

func (c *Config) validate() error {
	switch {
	case c.ExecMin < 0 || c.ExecMax < c.ExecMin:
		return fmt.Errorf("oms: need 0 <= ExecMin <= ExecMax, got %v and %v", c.ExecMin, c.ExecMax)
	case c.MaxPending < 0:
		return fmt.Errorf("oms: MaxPending must not be negative, got %d", c.MaxPending)
	case c.MaxFrame < 1:
		return fmt.Errorf("oms: MaxFrame must be positive, got %d", c.MaxFrame)
	case c.OutboxLimit < 1:
		return fmt.Errorf("oms: OutboxLimit must be positive, got %d", c.OutboxLimit)
	case c.StatsInterval < 0 || c.WriteTimeout < 0 || c.CloseLinger < 0 || c.DrainTimeout < 0:
		return fmt.Errorf("oms: durations must not be negative")
	}
	return c.Risk.validate()
}

// engineConfig maps the server's settings onto the dispatch engine's.
func (c *Config) engineConfig() dispatch.Config[order] {
	maxPending := c.MaxPending
	if maxPending == 0 {
		maxPending = -1
	}
	return dispatch.Config[order]{
		Partitions: c.Partitions,
		RingSize:   c.RingSize,
		Workers:    c.Workers,
		MaxQueued:  c.MaxQueued,
		MaxPending: maxPending,
	}
}

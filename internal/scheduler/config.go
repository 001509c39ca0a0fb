package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"runtime"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Defaults for Config fields left at zero.
const (
	DefaultHorizon              = 30 * time.Minute
	DefaultLoadInterval         = 10 * time.Second
	DefaultTick                 = time.Millisecond
	DefaultMaxPayload           = 1 << 20
	DefaultMaxInbox             = 1 << 16
	DefaultGroupCache           = 1 << 16
	DefaultSweep                = time.Minute
	DefaultMaxAttempts          = 5
	DefaultRetryDelay           = time.Second
	DefaultMaxDelivering        = 1 << 14
	DefaultRefusalDelay         = time.Second
	DefaultOutcomeLinger        = 4 * time.Millisecond
	DefaultGroupLimit           = 100_000
	DefaultMinInterval          = time.Second
	DefaultIdempotencyRetention = 24 * time.Hour
	DefaultMaxIdempotencyKeys   = 1_000_000
	DefaultMaxDeadLetters       = 100_000
)

// Config configures a Scheduler.
type Config struct {
	// Store holds all durable state. Required; the caller closes it after
	// Stop.
	Store *store.Store

	// Deliverer receives due tasks. Required.
	Deliverer Deliverer

	// NodeID identifies this node among the replicas of every shard, and
	// Peers are the replicas (their node ids, this one's included) of a
	// shard created now. Defaults: node 1, alone.
	NodeID uint64
	Peers  []uint64

	// Transport carries replication messages to the other replicas;
	// required when Peers holds others.
	Transport replica.Transport

	// System, if set, is the state machine of the system group (the
	// registered clients and sessions), which the scheduler's replica
	// node then hosts beside the task shards, or, when Placed, where the
	// placement puts it (see replica.Config.System).
	System replica.StateMachine

	// Placed, when true, makes the node host only the shards it has a log
	// of when it starts: a cluster's placement gives it the others at
	// runtime through Node().Host. Default false: every shard is hosted.
	Placed bool

	// RaftTick is the replication's tick, and ElectionTicks the ticks
	// after which followers that hear nothing from a leader elect another
	// (randomly between 1 and 2 times it). Defaults replica.DefaultTick
	// (100 ms) and replica.DefaultElectionTicks (10).
	RaftTick      time.Duration
	ElectionTicks int
	// LogRetention is how many log entries a shard keeps after the state
	// they produced is durable, before its log is truncated. Default
	// replica.DefaultCompactEvery.
	LogRetention uint64

	// OnFinished, if set, is told of every occurrence that reached its
	// final outcome (delivered, or moved to the dead letter queue), once
	// that outcome is durable. It runs on a partition loop: it must be
	// quick and must not block or call the Scheduler.
	OnFinished func(Finished)

	// Retry decides what a failed attempt does next. Default: FixedRetry
	// with DefaultMaxAttempts attempts DefaultRetryDelay apart, or the
	// task's own policy when it has one.
	Retry RetryDecider

	// Clock drives every time decision. Default: the real clock.
	Clock clockwork.Clock

	// Logger receives lifecycle and error events, never per-task lines.
	// Default: discard.
	Logger *slog.Logger

	// Partitions is the number of partition loops, a power of two no
	// larger than store.Shards. Default: GOMAXPROCS rounded up.
	Partitions int

	// Horizon bounds how far ahead tasks are kept in the wheel. Default
	// 30 minutes.
	Horizon time.Duration

	// LoadInterval is how often the look-ahead loader moves tasks from
	// the store into the wheel. Default 10 seconds; must be below Horizon.
	LoadInterval time.Duration

	// Tick is the wheel's resolution. Default 1 ms.
	Tick time.Duration

	// MaxPayload bounds a task's payload in bytes. Default 1 MiB.
	MaxPayload int

	// MaxInbox bounds the requests waiting for one partition; beyond it
	// requests fail with ErrBusy. Default 65536.
	MaxInbox int

	// GroupCache is how many idle group records each partition keeps in
	// memory. Default 65536.
	GroupCache int

	// DeadLetterPolicy returns a client's dead letter limits. A client
	// over its maximum is trimmed, oldest first, as soon as the sweeper
	// gets to it; retention is enforced every SweepInterval. Default:
	// DefaultMaxDeadLetters entries, kept until deleted.
	DeadLetterPolicy func(client string) DeadLetterLimits

	// SweepInterval is how often expired dead letters and idempotency
	// keys are deleted. Default one minute.
	SweepInterval time.Duration

	// MaxDelivering bounds the delivery attempts under way at once; due
	// tasks beyond it wait, as ids, for a slot, and their records are
	// read when they start. Default 16384.
	MaxDelivering int

	// RefusalDelay is how long an attempt refused locally (ErrNotAttempted)
	// waits before it is tried again. Default one second.
	RefusalDelay time.Duration

	// OutcomeLinger is how long the recorded outcome of an attempt at a
	// task of no ordered group may wait for others of its shard, so that
	// up to 16 share one log entry and one round of replication: fewer
	// rounds a fire, at the price of up to this long before each outcome
	// is durable. Outcomes in an ordered group, which its next task waits
	// for, never wait. Measured on the system's monotonic clock, not
	// Clock: it bounds a batch and decides nothing. Default
	// DefaultOutcomeLinger; negative: none.
	OutcomeLinger time.Duration

	// GroupLimit returns how many tasks one group of a client may hold;
	// a registration beyond it fails with ErrGroupFull. Default (nil, or
	// an answer of 0): DefaultGroupLimit.
	GroupLimit func(client string) int

	// GroupRate returns the rate limit of a client's ordered group, read
	// by the leader when the group's next attempt is due. Default (nil,
	// or a zero RateLimit): none.
	GroupRate func(client, group string) RateLimit

	// MinInterval is the shortest repeat interval a recurring task may
	// have. Default one second.
	MinInterval time.Duration

	// IdempotencyRetention is how long an idempotency key is remembered
	// after the registration that used it, whether or not its task still
	// exists. Default 24 hours.
	IdempotencyRetention time.Duration

	// MaxIdempotencyKeys bounds the idempotency keys remembered; beyond
	// it the oldest are forgotten before their retention ends. Default
	// 1,000,000.
	MaxIdempotencyKeys int

	// DefaultMode applies to tasks registered with
	// DISPATCH_MODE_UNSPECIFIED. Default NEXT_ON_ERROR.
	DefaultMode storepb.DispatchMode

	// wallSkew, if set, is added to Clock's time for every wall clock
	// reading, so tests can step the wall clock without the monotonic
	// time that drives the wheel.
	wallSkew func() time.Duration
}

func (c *Config) ensureDefaults() {
	c.ensureLimits()
	if c.NodeID == 0 {
		c.NodeID = 1
	}
	if len(c.Peers) == 0 {
		c.Peers = []uint64{c.NodeID}
	}
	if c.Retry == nil {
		c.Retry = FixedRetry{Attempts: DefaultMaxAttempts, Delay: DefaultRetryDelay}
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Partitions == 0 && c.Store != nil {
		c.Partitions = min(c.Store.Shards(), 1<<bits.Len(uint(runtime.GOMAXPROCS(0)-1)))
	}
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.LoadInterval == 0 {
		c.LoadInterval = min(DefaultLoadInterval, c.Horizon/2)
	}
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxInbox == 0 {
		c.MaxInbox = DefaultMaxInbox
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = DefaultSweep
	}
	if c.GroupCache == 0 {
		c.GroupCache = DefaultGroupCache
	}
	if c.DefaultMode == storepb.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		c.DefaultMode = storepb.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR
	}
	if c.wallSkew == nil {
		c.wallSkew = func() time.Duration { return 0 }
	}
}

func (c *Config) ensureLimits() {
	if c.MaxDelivering == 0 {
		c.MaxDelivering = DefaultMaxDelivering
	}
	if c.RefusalDelay == 0 {
		c.RefusalDelay = DefaultRefusalDelay
	}
	if c.OutcomeLinger == 0 {
		c.OutcomeLinger = DefaultOutcomeLinger
	}
	if c.MinInterval == 0 {
		c.MinInterval = DefaultMinInterval
	}
	if c.IdempotencyRetention == 0 {
		c.IdempotencyRetention = DefaultIdempotencyRetention
	}
	if c.MaxIdempotencyKeys == 0 {
		c.MaxIdempotencyKeys = DefaultMaxIdempotencyKeys
	}
	if c.DeadLetterPolicy == nil {
		c.DeadLetterPolicy = func(string) DeadLetterLimits { return DeadLetterLimits{MaxEntries: DefaultMaxDeadLetters} }
	}
	limit := c.GroupLimit
	c.GroupLimit = func(client string) int {
		if limit != nil {
			if n := limit(client); n > 0 {
				return n
			}
		}
		return DefaultGroupLimit
	}
}

func (c *Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("scheduler: Config.Store is required")
	case c.Deliverer == nil:
		return errors.New("scheduler: Config.Deliverer is required")
	case c.Partitions < 1 || c.Partitions&(c.Partitions-1) != 0 || c.Partitions > c.Store.Shards():
		return fmt.Errorf("scheduler: Config.Partitions must be a power of two between 1 and the store's %d shards, got %d", c.Store.Shards(), c.Partitions)
	case c.Tick <= 0:
		return fmt.Errorf("scheduler: Config.Tick must be positive, got %v", c.Tick)
	case c.Horizon < 2*c.Tick:
		return fmt.Errorf("scheduler: Config.Horizon must be at least two ticks, got %v", c.Horizon)
	case c.LoadInterval <= 0 || c.LoadInterval >= c.Horizon:
		return fmt.Errorf("scheduler: Config.LoadInterval must be positive and below Horizon (%v), got %v", c.Horizon, c.LoadInterval)
	case c.SweepInterval < 0:
		return fmt.Errorf("scheduler: Config.SweepInterval must be positive, got %v", c.SweepInterval)
	case c.MaxPayload < 0 || c.MaxInbox < 1 || c.GroupCache < 0:
		return errors.New("scheduler: Config.MaxPayload and MaxInbox must be positive, GroupCache not negative")
	case c.MaxDelivering < c.Partitions:
		return fmt.Errorf("scheduler: Config.MaxDelivering must be at least Partitions (%d), got %d", c.Partitions, c.MaxDelivering)
	case c.RefusalDelay < 0 || c.MinInterval < c.Tick || c.IdempotencyRetention < 0 || c.MaxIdempotencyKeys < 0:
		return errors.New("scheduler: Config.RefusalDelay, IdempotencyRetention and MaxIdempotencyKeys must not be negative, MinInterval not below Tick")
	}
	return nil
}

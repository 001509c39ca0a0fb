package omsload

import (
	"flag"
	"fmt"
	"time"

	"github.com/boomerangd/boomerang/internal/oms"
)

// Defaults for Config fields left at zero.
const (
	// DefaultConns is the number of connections (the hot-family scenario
	// adds one for its hot account).
	DefaultConns = 4
	// DefaultWindow is how many orders a connection may have unanswered
	// in closed-loop mode.
	DefaultWindow = 1024
	// DefaultHotShare is the hot account's share of hot-family orders.
	DefaultHotShare = 0.5
	// DefaultDrainTimeout bounds the wait for responses once sending has
	// stopped.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultSeed seeds the scenario generators.
	DefaultSeed = 1
)

// Config configures one load run.
type Config struct {
	// Addr is the server's host:port. Required.
	Addr string

	// Scenario is one of Scenarios(). Required.
	Scenario string

	// Conns is the number of connections. Every account's orders go over
	// one of them, in seq order. Default DefaultConns.
	Conns int

	// Rate is the total offered load in orders per second, spread evenly
	// over the connections (open loop: orders leave on schedule whether or
	// not answers come back, and latency counts from the scheduled time).
	// Zero means closed loop: each connection keeps up to Window orders
	// unanswered and sends as fast as answers return.
	Rate float64

	// Duration, if set, sends for this long instead of a fixed count.
	// Set at most one of Duration and Orders.
	Duration time.Duration

	// Orders is the number of orders to send. Default: the scenario's
	// (see Scenarios).
	Orders int

	// Window bounds unanswered orders per connection in closed-loop mode.
	// Default DefaultWindow.
	Window int

	// Accounts is the number of accounts (correlation ids). Default: the
	// scenario's.
	Accounts int

	// HotShare is the share of hot-family orders that belong to the hot
	// account, in (0, 1). Default DefaultHotShare.
	HotShare float64

	// NoHot runs hot-family without its hot account: the other accounts'
	// connections send exactly what they would with it, so their latency
	// can be compared with and without the hot account present.
	NoHot bool

	// Seed seeds the generators; a run is reproducible up to timing.
	// Default DefaultSeed.
	Seed uint64

	// DrainTimeout bounds the wait for outstanding responses after the
	// last order is sent; unanswered orders then count as missing.
	// Default DefaultDrainTimeout.
	DrainTimeout time.Duration

	// Risk must match the server's risk settings: the mixed scenario
	// builds its deliberately failing orders, and their expected reasons,
	// from it. Zero fields take the oms defaults, which is what minioms
	// runs with unless told otherwise.
	Risk oms.RiskConfig
}

func (c *Config) setDefaults() {
	if c.Conns == 0 {
		c.Conns = DefaultConns
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.HotShare == 0 {
		c.HotShare = DefaultHotShare
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if sc, ok := scenarios[c.Scenario]; ok {
		if c.Orders == 0 && c.Duration == 0 {
			c.Orders = sc.orders
		}
		if c.Accounts == 0 {
			c.Accounts = sc.accounts
		}
	}
	c.Risk = oms.EffectiveRisk(c.Risk)
}

func (c *Config) validate() error {
	if _, ok := scenarios[c.Scenario]; !ok {
		return fmt.Errorf("%w %q (want one of %v)", ErrUnknownScenario, c.Scenario, Scenarios())
	}
	switch {
	case c.Addr == "":
		return fmt.Errorf("omsload: Addr is required")
	case c.Conns < 1 || c.Window < 1:
		return fmt.Errorf("omsload: Conns and Window must be positive")
	case c.Rate < 0 || c.Orders < 0 || c.Duration < 0 || c.Accounts < 0:
		return fmt.Errorf("omsload: Rate, Orders, Duration and Accounts must not be negative")
	case c.Orders > 0 && c.Duration > 0:
		return fmt.Errorf("omsload: set Orders or Duration, not both")
	case c.HotShare <= 0 || c.HotShare >= 1:
		return fmt.Errorf("omsload: HotShare must be in (0, 1), got %v", c.HotShare)
	case !scenarios[c.Scenario].uncorr && c.Accounts < c.Conns:
		return fmt.Errorf("omsload: need at least one account per connection, got %d accounts for %d connections", c.Accounts, c.Conns)
	}
	return nil
}

// RegisterFlags binds c's fields to command-line flags in fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", oms.DefaultListen, "server address HOST:PORT")
	fs.StringVar(&c.Scenario, "scenario", "", fmt.Sprintf("scenario: one of %v", Scenarios()))
	fs.IntVar(&c.Conns, "conns", DefaultConns, "connections (hot-family adds one for the hot account)")
	fs.Float64Var(&c.Rate, "rate", 0, "total orders per second, open loop (0: closed loop, as fast as answers return)")
	fs.DurationVar(&c.Duration, "duration", 0, "send for this long instead of -orders")
	fs.IntVar(&c.Orders, "orders", 0, "orders to send (0: the scenario's default)")
	fs.IntVar(&c.Window, "window", DefaultWindow, "closed loop: unanswered orders allowed per connection")
	fs.IntVar(&c.Accounts, "accounts", 0, "accounts (0: the scenario's default)")
	fs.Float64Var(&c.HotShare, "hot-share", DefaultHotShare, "hot-family: share of orders from the hot account")
	fs.BoolVar(&c.NoHot, "no-hot", false, "hot-family: leave the hot account out, other accounts unchanged")
	fs.Uint64Var(&c.Seed, "seed", DefaultSeed, "generator seed")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", DefaultDrainTimeout, "how long to wait for responses after the last send")
}

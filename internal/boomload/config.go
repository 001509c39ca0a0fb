package boomload

import (
	"errors"
	"fmt"
	"time"

	"github.com/boomerangd/boomerang/client"
)

// Defaults for Config fields left at zero.
const (
	DefaultConns       = 4
	DefaultDepth       = 256
	DefaultPayloadSize = 100
	DefaultDuration    = 10 * time.Second
	DefaultGrace       = 5 * time.Second
	// DefaultDelay makes the registered tasks due a day later, so none is
	// delivered during the run.
	DefaultDelay = 24 * time.Hour
	// DefaultGroups spreads registrations over this many groups; zero
	// groups (Groups < 0) registers ungrouped tasks.
	DefaultGroups = 1000
)

// ErrConfig is returned for a Config that cannot run.
var ErrConfig = errors.New("boomload: bad configuration")

// Config is one load run.
type Config struct {
	// Addr is the server's TCP address. Required.
	Addr string
	// Credentials log each connection in. Required.
	Credentials client.Credentials
	// Options are passed to each connection's Dial, such as
	// client.WithTLS.
	Options []client.Option
	// Conns is the number of connections (Clients). Default DefaultConns.
	Conns int
	// Depth is the requests in flight per connection. Default
	// DefaultDepth.
	Depth int
	// Batch is the tasks of each request: 1 sends RegisterTask requests,
	// more sends RegisterTasks requests of Batch tasks (at most
	// client.MaxBatch, and within the server's frame limit). Default 1.
	Batch int
	// PayloadSize is each task's payload in bytes. Default
	// DefaultPayloadSize; negative means empty.
	PayloadSize int
	// Count stops the run after this many registrations (tasks); Duration stops
	// it after this long. With neither, Duration is DefaultDuration.
	Count    int
	Duration time.Duration
	// Delay is how far ahead tasks are due. Default DefaultDelay.
	Delay time.Duration
	// Groups is how many groups the tasks are spread over, round robin;
	// negative means no groups. Default DefaultGroups.
	Groups int
	// GroupPrefix names the groups: <prefix><n>. Default "bench-".
	GroupPrefix string
	// Warmup registrations run before measuring starts, rounded up to
	// whole batches. Default 0.
	Warmup int
	// Grace is how long registrations still under way when the run ends
	// may take before they are given up, so that a run ends even when
	// the server stops answering. Default DefaultGrace.
	Grace time.Duration
}

func (c *Config) setDefaults() {
	if c.Conns == 0 {
		c.Conns = DefaultConns
	}
	if c.Depth == 0 {
		c.Depth = DefaultDepth
	}
	if c.Batch == 0 {
		c.Batch = 1
	}
	if c.PayloadSize == 0 {
		c.PayloadSize = DefaultPayloadSize
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Count == 0 && c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Delay == 0 {
		c.Delay = DefaultDelay
	}
	if c.Groups == 0 {
		c.Groups = DefaultGroups
	}
	if c.GroupPrefix == "" {
		c.GroupPrefix = "bench-"
	}
}

func (c *Config) validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("%w: the server address is required", ErrConfig)
	case c.Credentials.ClientID == "":
		return fmt.Errorf("%w: credentials are required", ErrConfig)
	case c.Conns < 1 || c.Depth < 1:
		return fmt.Errorf("%w: connections and depth must be positive", ErrConfig)
	case c.Batch < 1 || c.Batch > client.MaxBatch:
		return fmt.Errorf("%w: a batch holds 1 to %d tasks, not %d", ErrConfig, client.MaxBatch, c.Batch)
	case c.Count < 0 || c.Duration < 0 || c.Delay < 0 || c.Warmup < 0:
		return fmt.Errorf("%w: count, duration, delay and warmup must not be negative", ErrConfig)
	case c.Count > 0 && c.Duration > 0:
		return fmt.Errorf("%w: give a count or a duration, not both", ErrConfig)
	}
	return nil
}

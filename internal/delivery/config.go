package delivery

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// DefaultPool is the pool of callbacks that name none, or a pool that is
// not configured. It always exists.
const DefaultPool = "default"

// Defaults for Config and PoolConfig fields left at zero.
const (
	DefaultMaxConcurrent  = 256
	DefaultMaxQueued      = 1 << 18
	DefaultTimeout        = 10 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
	DefaultTCPConns       = 2
	DefaultRedialMin      = 100 * time.Millisecond
	DefaultRedialMax      = 10 * time.Second
	DefaultMaxAttempts    = 10
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultMultiplier     = 2
	DefaultJitter         = 0.2
)

// Limits on callbacks.
const (
	// MaxTimeout bounds a callback's per-attempt timeout.
	MaxTimeout = 10 * time.Minute
	// MaxEndpointLen bounds a callback's endpoint, in bytes.
	MaxEndpointLen = 2048
	// MaxPoolNameLen bounds a pool name, in bytes.
	MaxPoolNameLen = 128
	// MaxUDPDatagram is the largest UDP payload IPv4 can carry.
	MaxUDPDatagram = 65507
	// MaxUDPPayload bounds a task payload delivered over UDP: the datagram
	// limit less room for the Delivery envelope (ids, times, client id up
	// to 128 bytes, group up to 256 bytes).
	MaxUDPPayload = MaxUDPDatagram - 1024
)

// ClientSource gives a client's configuration. *store.Store satisfies it.
// An unknown client is an error wrapping store.ErrNotFound.
type ClientSource interface {
	Client(id string) (*storepb.Client, error)
}

// ClientDetails is what a ClientSource may know beyond the stored record:
// when Config.Clients implements it, deliveries are signed with the
// secrets it gives, not the record's signing_secret, and checked against
// the client's own callback rules.
type ClientDetails interface {
	ClientDetails(id string) (Details, error)
}

// Details are a client's signing secrets and callback rules.
type Details struct {
	// Secrets sign webhooks, newest first: each delivery carries one
	// signature per secret that has not expired.
	Secrets []Secret
	// Rules are the client's own callback rules (see egress.Policy.Narrow);
	// nil: none.
	Rules *egress.Policy
}

// Secret is a signing secret; a zero Until never expires.
type Secret struct {
	Key   []byte
	Until time.Time
}

// Config configures an Engine.
type Config struct {
	// Clients gives a task's client: its default callback, retry policy
	// and signing secret. Required. Entries are cached until Invalidate.
	Clients ClientSource

	// Pools are the named dispatch pools callbacks refer to. DefaultPool
	// always exists; when absent here it gets DefaultMaxConcurrent and no
	// rate limit. A callback naming a pool not listed here uses
	// DefaultPool.
	Pools map[string]PoolConfig

	// DefaultTimeout bounds an attempt whose callback sets no timeout.
	// Default 10 seconds; at most MaxTimeout.
	DefaultTimeout time.Duration

	// DefaultRetry fills the fields that neither a task's nor its
	// client's policy sets. Default: exponential from 1 s, ×2, at most
	// 5 min apart, jitter 0.2, 10 attempts. Its own zero fields take those
	// defaults too.
	DefaultRetry *storepb.RetryPolicy

	// IdleTimeout closes outbound connections (TCP, UDP sockets, HTTP and
	// gRPC keep-alives) unused for this long. Default 90 seconds.
	IdleTimeout time.Duration

	// TCPConns is the number of pipelined connections per raw TCP
	// endpoint. Default 2.
	TCPConns int

	// RedialMin and RedialMax bound the backoff between failed dials of a
	// raw TCP endpoint; while it lasts, attempts to that endpoint fail at
	// once. Defaults 100 ms and 10 s.
	RedialMin, RedialMax time.Duration

	// Registerer receives the engine's metrics. Default: none (the
	// metrics are still kept; see Stats).
	Registerer prometheus.Registerer

	// Logger receives lifecycle and configuration events, never one line
	// per delivery. Default: discard.
	Logger *slog.Logger

	// Clock drives timeouts, rate limits, redial backoff and timestamps.
	// Default: the real clock.
	Clock clockwork.Clock

	// SinkRootCAs are the certificate authorities trusted for TLS to
	// queue brokers (activemqs://). Default: nil, the system's.
	SinkRootCAs *x509.CertPool

	// Egress is the server's callback policy. Every attempt's endpoint is
	// checked against it (with its client's rules) before it is made, and
	// every connection the engine opens after DNS resolution, so a name
	// that resolves to a denied address is refused. A denied attempt
	// fails for good. Default: nil, which allows every destination.
	Egress *egress.Policy
}

// PoolConfig limits the deliveries of one dispatch pool.
type PoolConfig struct {
	// MaxConcurrent bounds the attempts under way at once. Default 256.
	// Within the pool each endpoint with work gets an equal share of
	// this bound, so one slow endpoint cannot take the pool.
	MaxConcurrent int

	// MaxPerSecond bounds how many attempts start per second, with bursts
	// of up to a tenth of a second's worth (at least one). Zero means no
	// limit.
	MaxPerSecond float64

	// MaxQueued bounds the attempts waiting for a slot; beyond it an
	// attempt fails at once with ErrPoolFull, which the scheduler tries
	// again after its RefusalDelay without counting an attempt. Default
	// 262144.
	MaxQueued int
}

func (c *Config) ensureDefaults() {
	if c.Pools == nil {
		c.Pools = map[string]PoolConfig{}
	}
	pools := make(map[string]PoolConfig, len(c.Pools)+1)
	pools[DefaultPool] = PoolConfig{}
	for name, p := range c.Pools {
		pools[name] = p
	}
	for name, p := range pools {
		if p.MaxConcurrent == 0 {
			p.MaxConcurrent = DefaultMaxConcurrent
		}
		if p.MaxQueued == 0 {
			p.MaxQueued = DefaultMaxQueued
		}
		pools[name] = p
	}
	c.Pools = pools
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	c.DefaultRetry = fillRetry(c.DefaultRetry, builtinRetry)
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.TCPConns == 0 {
		c.TCPConns = DefaultTCPConns
	}
	if c.RedialMin == 0 {
		c.RedialMin = DefaultRedialMin
	}
	if c.RedialMax == 0 {
		c.RedialMax = max(DefaultRedialMax, c.RedialMin)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
}

func (c *Config) validate() error {
	if c.Clients == nil {
		return errors.New("delivery: Config.Clients is required")
	}
	for name, p := range c.Pools {
		switch {
		case name == "" || len(name) > MaxPoolNameLen:
			return fmt.Errorf("delivery: pool name %q must be 1 to %d bytes", name, MaxPoolNameLen)
		case p.MaxConcurrent < 1:
			return fmt.Errorf("delivery: pool %q: MaxConcurrent must be positive, got %d", name, p.MaxConcurrent)
		case p.MaxPerSecond < 0 || math.IsNaN(p.MaxPerSecond) || math.IsInf(p.MaxPerSecond, 0):
			return fmt.Errorf("delivery: pool %q: MaxPerSecond must be a finite number, not negative, got %g", name, p.MaxPerSecond)
		case p.MaxQueued < 1:
			return fmt.Errorf("delivery: pool %q: MaxQueued must be positive, got %d", name, p.MaxQueued)
		}
	}
	switch {
	case c.DefaultTimeout < 0 || c.DefaultTimeout > MaxTimeout:
		return fmt.Errorf("delivery: Config.DefaultTimeout must be between 0 and %v, got %v", MaxTimeout, c.DefaultTimeout)
	case c.IdleTimeout < 0:
		return fmt.Errorf("delivery: Config.IdleTimeout must not be negative, got %v", c.IdleTimeout)
	case c.TCPConns < 1 || c.TCPConns > 64:
		return fmt.Errorf("delivery: Config.TCPConns must be between 1 and 64, got %d", c.TCPConns)
	case c.RedialMin < 0 || c.RedialMax < c.RedialMin:
		return fmt.Errorf("delivery: Config.RedialMin (%v) and RedialMax (%v) must be ordered and not negative", c.RedialMin, c.RedialMax)
	}
	return validatePolicy("Config.DefaultRetry", c.DefaultRetry)
}

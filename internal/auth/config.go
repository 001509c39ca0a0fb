package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/jonboulle/clockwork"
)

// Defaults for Config fields left at zero.
const (
	DefaultSessionTTL           = time.Hour
	DefaultExpiredRetention     = 24 * time.Hour
	DefaultLoginBackoff         = 200 * time.Millisecond
	DefaultMaxLoginBackoff      = 30 * time.Second
	DefaultMaxSessionsPerClient = 1000
	DefaultMaxThrottled         = 1 << 16
	DefaultLoginsPerSource      = 20
	DefaultMaxLoginWait         = 5 * time.Second
	DefaultWriteTimeout         = 5 * time.Second
	// DefaultLoginChecksPerCore is the password checks per second and
	// core the server runs for logins: with the default hash (about 40
	// ms of one core) a third of the CPU.
	DefaultLoginChecksPerCore = 8
)

// Default argon2id parameters: the OWASP recommendation for argon2id
// (19 MiB, two passes, one lane). They are stored with each hash, so
// raising them later leaves existing passwords valid.
const (
	DefaultHashTime      = 2
	DefaultHashMemoryKiB = 19 * 1024
	DefaultHashThreads   = 1
)

// HashParams are argon2id's cost parameters.
type HashParams struct {
	Time      uint32 // passes over memory
	MemoryKiB uint32 // memory in KiB
	Threads   uint8  // lanes
}

// Config configures an Auth.
type Config struct {
	// SessionTTL is how long a session lives after login or refresh.
	// Default 1 hour.
	SessionTTL time.Duration

	// ExpiredRetention is how long an expired session is remembered, so
	// that it is answered with ErrSessionExpired rather than
	// ErrUnknownSession. Default 24 hours.
	ExpiredRetention time.Duration

	// LoginBackoff is the wait imposed after a client's first failed
	// login; it doubles with each further failure up to MaxLoginBackoff.
	// Defaults 200 ms and 30 s.
	LoginBackoff    time.Duration
	MaxLoginBackoff time.Duration

	// MaxSessionsPerClient bounds one client's live sessions; a login
	// beyond it ends the client's oldest session. Default 1000.
	MaxSessionsPerClient int

	// MaxThrottled bounds the client ids whose failed logins are
	// remembered. Default 65536.
	MaxThrottled int

	// Hash sets the cost of new password hashes. Zero fields take the
	// DefaultHash* values.
	Hash HashParams

	// MaxConcurrentHashes bounds password hashes computed at once, each
	// holding Hash.MemoryKiB of memory. Default GOMAXPROCS.
	MaxConcurrentHashes int

	// LoginChecksPerSecond bounds the password checks logins cause,
	// server-wide, with bursts of five seconds' worth: logins beyond it
	// wait for their turn up to MaxLoginWait, then get ErrLoginBusy.
	// Default DefaultLoginChecksPerCore × MaxConcurrentHashes.
	LoginChecksPerSecond float64

	// MaxLoginWait bounds that wait. Default 5 s; negative: no wait.
	MaxLoginWait time.Duration

	// LoginsPerSource bounds the login attempts of one source address
	// (an IPv6 /64) per second, with bursts of five seconds' worth;
	// beyond it ErrLoginBusy at once. Default 20.
	LoginsPerSource float64

	// SecretKeys seal the signing secrets at rest (AES-256-GCM, 32 bytes
	// each). The first seals; the others only open records sealed
	// before a key rotation, which New seals again with the first.
	// Required.
	SecretKeys [][]byte

	// Replicated is set on a node of a cluster, whose replica of the
	// system group may lag its leader's or be missing (see doc.go,
	// Replication). Default false: a standalone node, the group's only
	// voter.
	Replicated bool

	// WriteTimeout bounds how long a change (a client's, or a login's
	// session) waits to be committed by the system group and applied
	// here; beyond it the change fails with ErrNoLeader, and may still
	// take effect. Default 5 s.
	WriteTimeout time.Duration

	// Clock decides session expiry and login backoff. Default: the real
	// clock.
	Clock clockwork.Clock

	// Logger receives client changes and bootstrap events, never
	// per-login lines. Default: discard.
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() {
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.ExpiredRetention == 0 {
		c.ExpiredRetention = DefaultExpiredRetention
	}
	if c.LoginBackoff == 0 {
		c.LoginBackoff = DefaultLoginBackoff
	}
	if c.MaxLoginBackoff == 0 {
		c.MaxLoginBackoff = DefaultMaxLoginBackoff
	}
	if c.MaxSessionsPerClient == 0 {
		c.MaxSessionsPerClient = DefaultMaxSessionsPerClient
	}
	if c.MaxThrottled == 0 {
		c.MaxThrottled = DefaultMaxThrottled
	}
	if c.Hash.Time == 0 {
		c.Hash.Time = DefaultHashTime
	}
	if c.Hash.MemoryKiB == 0 {
		c.Hash.MemoryKiB = DefaultHashMemoryKiB
	}
	if c.Hash.Threads == 0 {
		c.Hash.Threads = DefaultHashThreads
	}
	if c.MaxConcurrentHashes == 0 {
		c.MaxConcurrentHashes = runtime.GOMAXPROCS(0)
	}
	if c.LoginChecksPerSecond == 0 {
		c.LoginChecksPerSecond = DefaultLoginChecksPerCore * float64(c.MaxConcurrentHashes)
	}
	if c.MaxLoginWait == 0 {
		c.MaxLoginWait = DefaultMaxLoginWait
	}
	if c.LoginsPerSource == 0 {
		c.LoginsPerSource = DefaultLoginsPerSource
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	switch {
	case c.SessionTTL < time.Second:
		return fmt.Errorf("auth: Config.SessionTTL must be at least 1s, got %v", c.SessionTTL)
	case c.ExpiredRetention < 0:
		return fmt.Errorf("auth: Config.ExpiredRetention must not be negative, got %v", c.ExpiredRetention)
	case c.LoginBackoff < 0 || c.MaxLoginBackoff < c.LoginBackoff:
		return fmt.Errorf("auth: Config.LoginBackoff (%v) must not be negative nor above MaxLoginBackoff (%v)", c.LoginBackoff, c.MaxLoginBackoff)
	case c.MaxSessionsPerClient < 1 || c.MaxThrottled < 1 || c.MaxConcurrentHashes < 1:
		return errors.New("auth: Config.MaxSessionsPerClient, MaxThrottled and MaxConcurrentHashes must be positive")
	case c.LoginChecksPerSecond < 0 || c.LoginsPerSource < 0:
		return fmt.Errorf("auth: Config.LoginChecksPerSecond (%g) and LoginsPerSource (%g) must not be negative", c.LoginChecksPerSecond, c.LoginsPerSource)
	case c.Hash.MemoryKiB < 8*uint32(c.Hash.Threads):
		return fmt.Errorf("auth: Config.Hash.MemoryKiB must be at least 8 KiB per thread, got %d", c.Hash.MemoryKiB)
	}
	return nil
}

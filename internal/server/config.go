package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

// Defaults for Config fields left at zero. They work on a laptop with no
// other services.
const (
	DefaultDataDir          = "./boomerang-data"
	DefaultTCPAddr          = "127.0.0.1:7070"
	DefaultHTTPAddr         = "127.0.0.1:7071"
	DefaultMaxPayloadBytes  = 1 << 20
	DefaultFrameOverhead    = 64 << 10 // MaxFrameBytes = MaxPayloadBytes + this
	DefaultMaxInFlight      = 256
	DefaultMaxConnections   = 10000
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultWriteTimeout     = 30 * time.Second
	DefaultCloseLinger      = time.Second
	DefaultAdminID          = "admin"
	DefaultVersion          = "dev"
	// DefaultMaxPendingLogins and DefaultMaxPendingLoginsPerAddr bound
	// raw TCP connections that have not logged in yet.
	DefaultMaxPendingLogins        = 1024
	DefaultMaxPendingLoginsPerAddr = 64
	// DefaultMaxConnBufferBytes and DefaultMaxBufferBytes bound the
	// bytes of requests being served and responses not yet sent, per raw
	// TCP connection and in all.
	DefaultMaxConnBufferBytes = 8 << 20
	DefaultMaxBufferBytes     = 256 << 20
	// DefaultHTTPReadTimeout bounds reading one HTTP request, body
	// included.
	DefaultHTTPReadTimeout = 30 * time.Second
	// SecretKeyFile is where the server keeps a generated secret key, in
	// the data directory, when none is configured.
	SecretKeyFile = "secret.key"
)

// Limits on Config values.
const (
	// MinFrameOverhead is the least room a frame must leave beyond the
	// largest payload, for the other fields of a request.
	MinFrameOverhead = 4 << 10
	// MaxFrameLimit bounds MaxFrameBytes: 64 MiB.
	MaxFrameLimit = 64 << 20
)

// Config configures a Server. Zero fields take the defaults above unless
// their comment says otherwise.
type Config struct {
	// DataDir holds the store. Default "./boomerang-data"; created if
	// missing.
	DataDir string

	// TCPAddr is the raw TCP (protobuf frames) listen address; HTTPAddr
	// serves Connect (gRPC, gRPC-Web, HTTP/JSON), /metrics, /healthz and
	// /readyz. Port 0 picks a free port (see TCPAddr and HTTPAddr
	// methods). Defaults 127.0.0.1:7070 and 127.0.0.1:7071.
	TCPAddr  string
	HTTPAddr string

	// Pprof serves Go's profiler (net/http/pprof) under /debug/pprof/
	// beside /metrics. Off by default: profiles show internals and cost
	// CPU.
	Pprof bool

	// MetricsAddr, when set, serves /metrics (and /debug/pprof/ with
	// Pprof) on a listener of their own, without TLS, and no longer on
	// HTTPAddr. Default "": on HTTPAddr.
	MetricsAddr string

	// MetricsToken, when set, must come as "Authorization: Bearer
	// <token>" with every request for /metrics and /debug/pprof/.
	// Default "": none needed.
	MetricsToken string

	// TLS, when set, serves both TCPAddr and HTTPAddr over TLS with it
	// (see LoadTLS); HTTP then offers HTTP/2 through TLS instead of
	// cleartext h2c. Default nil: plain TCP.
	TLS *tls.Config

	// SinkRootCAs are the certificate authorities trusted for TLS to
	// queue brokers (see LoadRootCAs). Default nil: the system's.
	SinkRootCAs *x509.CertPool

	// AllowOpenDataDir lets the server start on a data directory that
	// its group or others may read or enter. By default such a directory
	// is refused: it holds the password hashes and sealed signing
	// secrets.
	AllowOpenDataDir bool

	// SecretKeys seal the clients' signing secrets at rest (see
	// auth.Config.SecretKeys): the first seals, the others only open
	// what was sealed before a key rotation. Default: a key generated
	// into DataDir/secret.key on first start, and read from there after.
	SecretKeys [][]byte

	// CallbackAllow and CallbackDeny are the server's callback policy
	// (package egress): networks, addresses and host patterns. A
	// callback is checked when it is registered and each connection
	// after DNS resolution. The entry "default" in CallbackDeny stands
	// for egress.DefaultDeny, and "none" for nothing. Defaults: allow
	// everything not denied; deny egress.DefaultDeny.
	CallbackAllow []string
	CallbackDeny  []string

	// MaxPayloadBytes bounds a task's payload; the scheduler's limit
	// follows it. Default 1 MiB.
	MaxPayloadBytes int

	// MaxFrameBytes bounds one raw TCP frame (without its length prefix)
	// and one Connect request message; list responses are cut short to
	// stay under it. It must leave MinFrameOverhead beyond
	// MaxPayloadBytes. Default MaxPayloadBytes + 64 KiB.
	MaxFrameBytes int

	// MaxInFlight bounds the requests of one raw TCP connection that are
	// running or waiting for their response to be written; the
	// connection is not read further until one finishes. Default 256.
	MaxInFlight int

	// MaxConnections bounds open raw TCP connections; beyond it new ones
	// get a BUSY error frame and are closed. Default 10000.
	MaxConnections int

	// MaxPendingLogins bounds raw TCP connections that have not logged in
	// yet (no request of theirs carried a live session or logged in),
	// and MaxPendingLoginsPerAddr those from one source address (an IPv6
	// /64); beyond either, new connections get BUSY. Defaults 1024 and 64.
	MaxPendingLogins        int
	MaxPendingLoginsPerAddr int

	// MaxConnBufferBytes bounds the bytes one raw TCP connection holds in
	// requests being served and responses not yet written; at the bound
	// the connection is not read further. MaxBufferBytes bounds the same
	// over every connection, beyond the first 64 KiB of each, which every
	// connection may hold regardless so that small requests get through
	// when others have spent the budget. A single request over either
	// still goes through, alone. Defaults 8 MiB (at least 4 ×
	// MaxFrameBytes) and 256 MiB (at least MaxConnBufferBytes).
	MaxConnBufferBytes int
	MaxBufferBytes     int

	// HandshakeTimeout is how long a new raw TCP connection may take to
	// send what logs it in (a login, or any request with a live session;
	// checking it may take longer), and an HTTP request to send its
	// headers. Default 10 s.
	HandshakeTimeout time.Duration

	// HTTPReadTimeout bounds reading a whole HTTP request, body included,
	// so a trickled body cannot hold a connection. Default 30 s.
	HTTPReadTimeout time.Duration

	// IdleTimeout closes a raw TCP connection that sent nothing and had
	// nothing outstanding for this long, and an HTTP keep-alive
	// connection idle for as long. A frame must also arrive whole within
	// it once begun. Default 5 minutes.
	IdleTimeout time.Duration

	// WriteTimeout bounds one write of responses to a raw TCP connection;
	// a client that stops reading is disconnected after it. Default 30 s.
	WriteTimeout time.Duration

	// CloseLinger is how long a closing raw TCP connection keeps
	// discarding input after its last response, so that unread input
	// does not reset the connection and destroy responses in flight.
	// Default 1 s.
	CloseLinger time.Duration

	// SessionTTL is how long a session lives after login or refresh.
	// Default 1 hour.
	SessionTTL time.Duration

	// AdminID and AdminPassword create the first admin when the store has
	// no clients. An empty AdminPassword generates one, available once
	// from BootstrapPassword. Both are ignored once clients exist.
	// Default AdminID "admin".
	AdminID       string
	AdminPassword string

	// PasswordHash sets the argon2id cost of new password hashes. Zero
	// fields take the auth.DefaultHash* values.
	PasswordHash auth.HashParams

	// LoginChecksPerSecond, MaxLoginWait and LoginsPerSource bound the
	// work logins may cause (see auth.Config). Defaults: 8 password
	// checks per second and core, waits of up to 5 s, 20 attempts per
	// second from one source.
	LoginChecksPerSecond float64
	MaxLoginWait         time.Duration
	LoginsPerSource      float64

	// Partitions is the number of scheduler partitions, a power of two.
	// Default: GOMAXPROCS rounded up.
	Partitions int

	// Shards is the number of virtual shards of a new data directory, a
	// power of two (default store.DefaultShards). An existing directory
	// keeps the number it was created with; a different non-zero value is
	// refused at start.
	Shards int

	// Limits bound what tasks and clients may hold; zero fields take the
	// scheduler's defaults.
	Limits Limits

	// Cluster, when set, makes the server a node of a cluster coordinated
	// through etcd (see docs/cluster.md). Default nil: standalone, every
	// shard hosted here alone.
	Cluster *ClusterConfig

	// StoreFS, if set, holds the store in memory instead of DataDir's
	// disk: for tests of a failing disk.
	StoreFS *store.MemFS

	// Pools are the delivery engine's named dispatch pools, and
	// DeliveryTimeout its per-attempt timeout for callbacks that set
	// none. Default: only the default pool; delivery.DefaultTimeout.
	Pools           map[string]delivery.PoolConfig
	DeliveryTimeout time.Duration

	// Panel configures the web panel and the history kept for it.
	Panel PanelConfig

	// Version is reported by GetServerInfo. Default "dev".
	Version string

	// Logger receives lifecycle events and errors, never a line per
	// request. Default: discard.
	Logger *slog.Logger

	// Clock drives task due times, session expiry and login backoff.
	// Socket deadlines and latency metrics use real time. Default: the
	// real clock.
	Clock clockwork.Clock

	// Deliverer and Retry replace parts of the delivery engine, for
	// tests. With a nil Deliverer the server runs the delivery engine,
	// which also decides retries unless Retry is set. With a Deliverer
	// and no Retry, the scheduler's default retry applies.
	Deliverer scheduler.Deliverer
	Retry     scheduler.RetryDecider

	// OnFinished, if set, is the scheduler's Config.OnFinished: told of
	// every occurrence's final outcome once durable, on a scheduler loop,
	// so it must not block.
	OnFinished func(scheduler.Finished)
}

// Limits bound what one client's tasks may hold, so that no client can
// grow the server without bound. Zero fields take the defaults.
type Limits struct {
	// GroupTasks is how many tasks one group may hold, for a client
	// whose record sets no limit; beyond it registrations fail with
	// GROUP_FULL. Default scheduler.DefaultGroupLimit (100,000).
	GroupTasks int
	// MinInterval is the shortest repeat interval. Default
	// scheduler.DefaultMinInterval (1 s).
	MinInterval time.Duration
	// DeadLetters is a client's dead letter maximum when its record sets
	// none; the oldest beyond it are deleted. Default
	// scheduler.DefaultMaxDeadLetters (100,000).
	DeadLetters int
	// IdempotencyRetention is how long an idempotency key is remembered.
	// Default scheduler.DefaultIdempotencyRetention (24 h).
	IdempotencyRetention time.Duration
	// IdempotencyKeys bounds the keys remembered, oldest forgotten first.
	// Default scheduler.DefaultMaxIdempotencyKeys (1,000,000).
	IdempotencyKeys int
}

func (l Limits) validate() error {
	switch {
	case l.GroupTasks < 0 || l.DeadLetters < 0 || l.IdempotencyKeys < 0:
		return errors.New("server: Limits must not be negative")
	case l.MinInterval < 0 || l.IdempotencyRetention < 0:
		return errors.New("server: Limits durations must not be negative")
	}
	return nil
}

func (c *Config) ensureDefaults() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.TCPAddr == "" {
		c.TCPAddr = DefaultTCPAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.MaxPayloadBytes == 0 {
		c.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = c.MaxPayloadBytes + DefaultFrameOverhead
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxPendingLogins == 0 {
		c.MaxPendingLogins = min(DefaultMaxPendingLogins, c.MaxConnections)
	}
	if c.MaxPendingLoginsPerAddr == 0 {
		c.MaxPendingLoginsPerAddr = min(DefaultMaxPendingLoginsPerAddr, c.MaxPendingLogins)
	}
	if c.MaxConnBufferBytes == 0 {
		c.MaxConnBufferBytes = max(DefaultMaxConnBufferBytes, 4*c.MaxFrameBytes)
	}
	if c.MaxBufferBytes == 0 {
		c.MaxBufferBytes = max(DefaultMaxBufferBytes, c.MaxConnBufferBytes)
	}
	if c.HTTPReadTimeout == 0 {
		c.HTTPReadTimeout = DefaultHTTPReadTimeout
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.CloseLinger == 0 {
		c.CloseLinger = DefaultCloseLinger
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = auth.DefaultSessionTTL
	}
	if c.AdminID == "" {
		c.AdminID = DefaultAdminID
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	c.Panel.ensureDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
}

func (c *Config) validate() error {
	if err := firstError(c.Limits.validate(), c.Panel.validate(), c.Cluster.validate()); err != nil {
		return err
	}
	for name, addr := range map[string]string{"TCPAddr": c.TCPAddr, "HTTPAddr": c.HTTPAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("server: Config.%s %q must be host:port: %v", name, addr, err)
		}
	}
	switch {
	case c.MaxPayloadBytes < 0:
		return fmt.Errorf("server: Config.MaxPayloadBytes must not be negative, got %d", c.MaxPayloadBytes)
	case c.MaxFrameBytes > MaxFrameLimit:
		return fmt.Errorf("server: Config.MaxFrameBytes must be at most %d, got %d", MaxFrameLimit, c.MaxFrameBytes)
	case c.MaxFrameBytes < c.MaxPayloadBytes+MinFrameOverhead:
		return fmt.Errorf("server: Config.MaxFrameBytes (%d) must exceed MaxPayloadBytes (%d) by at least %d bytes",
			c.MaxFrameBytes, c.MaxPayloadBytes, MinFrameOverhead)
	case c.Partitions < 1 || c.Partitions&(c.Partitions-1) != 0 || c.Partitions > store.MaxShards:
		return fmt.Errorf("server: Config.Partitions must be a power of two between 1 and %d, got %d", store.MaxShards, c.Partitions)
	case c.Shards < 0 || c.Shards&(c.Shards-1) != 0 || c.Shards > store.MaxShards:
		return fmt.Errorf("server: Config.Shards must be 0 or a power of two up to %d, got %d", store.MaxShards, c.Shards)
	case c.MaxInFlight < 1 || c.MaxConnections < 1 || c.MaxPendingLogins < 1 || c.MaxPendingLoginsPerAddr < 1:
		return errors.New("server: Config.MaxInFlight, MaxConnections, MaxPendingLogins and MaxPendingLoginsPerAddr must be positive")
	case c.MaxConnBufferBytes < c.MaxFrameBytes || c.MaxBufferBytes < c.MaxConnBufferBytes:
		return fmt.Errorf("server: Config.MaxConnBufferBytes (%d) must be at least MaxFrameBytes (%d), and MaxBufferBytes (%d) at least MaxConnBufferBytes",
			c.MaxConnBufferBytes, c.MaxFrameBytes, c.MaxBufferBytes)
	case c.HandshakeTimeout < 0 || c.IdleTimeout < 0 || c.WriteTimeout < 0 || c.CloseLinger < 0 || c.HTTPReadTimeout < 0:
		return errors.New("server: Config.HandshakeTimeout, IdleTimeout, WriteTimeout, CloseLinger and HTTPReadTimeout must not be negative")
	case c.MetricsAddr != "" && !validAddr(c.MetricsAddr):
		return fmt.Errorf("server: Config.MetricsAddr %q must be host:port", c.MetricsAddr)
	}
	return nil
}

func validAddr(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	return err == nil
}

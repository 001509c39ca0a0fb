package client

import (
	"crypto/tls"
	"io"
	"log/slog"
	"time"
)

// Defaults for options left unset.
const (
	// DefaultDialTimeout bounds one attempt to open the TCP connection.
	DefaultDialTimeout = 5 * time.Second
	// DefaultReconnectMin and DefaultReconnectMax bound the wait between
	// attempts to reconnect after the connection breaks; the wait doubles
	// from the first to the second, with jitter.
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 5 * time.Second
	// DefaultMaxInFlight is how many requests one Client may have sent and
	// not yet answered. Further calls wait for a slot (or their context).
	DefaultMaxInFlight = 8192
	// DefaultMaxResponse is the largest response frame read, in bytes.
	DefaultMaxResponse = 64 << 20
	// DefaultLinger is how long a Schedule call made while gathered
	// registrations are in flight waits for others to share its request
	// (see WithCoalescing).
	DefaultLinger = 500 * time.Microsecond
)

// Option tunes a Client at Dial.
type Option func(*options)

type options struct {
	dialTimeout  time.Duration
	reconnectMin time.Duration
	reconnectMax time.Duration
	maxInFlight  int
	maxResponse  int
	logger       *slog.Logger
	session      Session
	tls          *tls.Config
	linger       time.Duration // < 0: coalescing off
	routing      bool
}

func newOptions(opts []Option) options {
	o := options{routing: true}
	for _, opt := range opts {
		opt(&o)
	}
	if o.dialTimeout <= 0 {
		o.dialTimeout = DefaultDialTimeout
	}
	if o.reconnectMin <= 0 {
		o.reconnectMin = DefaultReconnectMin
	}
	if o.reconnectMax <= 0 {
		o.reconnectMax = DefaultReconnectMax
	}
	o.reconnectMax = max(o.reconnectMax, o.reconnectMin)
	if o.maxInFlight <= 0 {
		o.maxInFlight = DefaultMaxInFlight
	}
	if o.maxResponse <= 0 {
		o.maxResponse = DefaultMaxResponse
	}
	switch {
	case o.linger == 0:
		o.linger = DefaultLinger
	case o.linger < 0:
		o.linger = 0
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// WithDialTimeout bounds each attempt to open the connection, at Dial and
// when reconnecting. Default DefaultDialTimeout.
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithReconnectBackoff sets the shortest and longest wait between
// reconnection attempts. Defaults DefaultReconnectMin and
// DefaultReconnectMax.
func WithReconnectBackoff(minWait, maxWait time.Duration) Option {
	return func(o *options) { o.reconnectMin, o.reconnectMax = minWait, maxWait }
}

// WithMaxInFlight bounds the requests sent and not yet answered. Default
// DefaultMaxInFlight.
func WithMaxInFlight(n int) Option { return func(o *options) { o.maxInFlight = n } }

// WithMaxResponse bounds the size of a response frame; a larger one breaks
// the connection. Default DefaultMaxResponse.
func WithMaxResponse(bytes int) Option { return func(o *options) { o.maxResponse = bytes } }

// WithCoalescing sets how long a Schedule call waits for others to share
// a RegisterTasks request with, at most: only while other gathered
// requests are in flight, for a call that finds none goes out at once.
// 0 turns coalescing off, so that every Schedule call is a RegisterTask
// request of its own. Default DefaultLinger; values over a millisecond
// are cut to one.
func WithCoalescing(linger time.Duration) Option {
	return func(o *options) {
		o.linger = min(linger, time.Millisecond)
		if linger <= 0 {
			o.linger = -1
		}
	}
}

// WithLogger sets where the Client logs connection changes and session
// refreshes. It never logs per request. Default: nowhere.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSession makes the Client use an existing session, for example one a
// command-line tool saved earlier, instead of logging in at Dial. With
// credentials too, an expired or unknown session is replaced by a new
// login; without, calls fail with ErrSessionExpired or ErrUnauthorized.
func WithSession(s Session) Option { return func(o *options) { o.session = s } }

// WithTLS connects over TLS with cfg: a server started with a
// certificate needs it. Without cfg.ServerName, the host of the address
// given to Dial is checked against the certificate. Set cfg.RootCAs to
// trust a private CA, and cfg.Certificates when the server asks for a
// client certificate.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithRouting turns routing on or off. On (the default), the Client
// sends each request to its shard's leader in a cluster, over a
// connection of its own to each node it needs, instead of letting the
// node it dialed forward it; see the package documentation. Off, every
// request goes to the node dialed, as to a standalone server.
func WithRouting(on bool) Option { return func(o *options) { o.routing = on } }

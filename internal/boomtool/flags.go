package boomtool

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// parseDuration reads a Go duration ("90s", "1h30m") that may start with
// whole days ("2d", "1d12h").
func parseDuration(s string) (time.Duration, error) {
	days := time.Duration(0)
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("bad duration %q: want e.g. 90s, 5m, 1h30m or 2d", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want e.g. 90s, 5m, 1h30m or 2d", s)
	}
	return days + d, nil
}

// durationFlag is a pflag.Value for durations with days.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string {
	if !f.set {
		return ""
	}
	return humanDuration(f.d)
}
func (f *durationFlag) Type() string { return "duration" }
func (f *durationFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("bad duration %q: must not be negative", s)
	}
	f.d, f.set = d, true
	return nil
}

// timeFlag is a pflag.Value for RFC 3339 times.
type timeFlag struct {
	t   time.Time
	set bool
}

func (f *timeFlag) String() string {
	if !f.set {
		return ""
	}
	return f.t.Format(time.RFC3339)
}
func (f *timeFlag) Type() string { return "time" }
func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("bad time %q: want RFC 3339, e.g. 2026-12-01T10:00:00Z", s)
	}
	f.t, f.set = t, true
	return nil
}

// parseID reads a task or dead letter id.
func parseID(what, s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, usagef("bad %s id %q: want a positive number", what, s)
	}
	return id, nil
}

// readPayload returns the payload from an argument or a file ("-" is
// standard input).
func readPayload(arg []string, file string, stdin io.Reader) ([]byte, bool, error) {
	switch {
	case len(arg) > 0 && file != "":
		return nil, false, usagef("give the payload as an argument or with --payload-file, not both")
	case file == "-":
		b, err := io.ReadAll(stdin)
		return b, true, err
	case file != "":
		b, err := os.ReadFile(file)
		return b, true, err
	case len(arg) > 0:
		return []byte(arg[0]), true, nil
	}
	return nil, false, nil
}

// parseMode reads a dispatch mode name.
func parseMode(s string) (boomerangv1.DispatchMode, error) {
	switch s {
	case "":
		return boomerangv1.DispatchMode_DISPATCH_MODE_UNSPECIFIED, nil
	case "next-on-error":
		return boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR, nil
	case "block-on-error":
		return boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR, nil
	case "immediate":
		return boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE, nil
	}
	return 0, usagef("bad mode %q: want next-on-error, block-on-error or immediate", s)
}

var modeNames = []string{"next-on-error", "block-on-error", "immediate"}

// parseCallback reads a callback URL: http(s)://… for webhooks,
// grpc://host:port, tcp://host:port, udp://host:port, or a queue sink:
// nats://host:port/subject, amqp(s)://host:port/vhost?…,
// activemq(s)://host:port/queue/NAME or sqs://HOST/ACCOUNT/NAME.fifo.
func parseCallback(s string, timeout time.Duration, pool string) (*boomerangv1.Callback, error) {
	if s == "" {
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, usagef("bad callback %q: want http://host/path, https://…, grpc://host:port, tcp://host:port, udp://host:port, nats://host:port/subject, amqp://host:port/vhost?routing_key=…, activemq://host:port/queue/NAME or sqs://HOST/ACCOUNT/NAME.fifo", s)
	}
	cb := &boomerangv1.Callback{TimeoutMs: timeout.Milliseconds(), Pool: pool}
	switch u.Scheme {
	case "http", "https":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_HTTP, s
	case "grpc":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_GRPC, u.Host
	case "tcp":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_TCP, u.Host
	case "udp":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_UDP, u.Host
	case "nats":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_NATS, s
	case "amqp", "amqps":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_AMQP, s
	case "activemq", "activemqs":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_ACTIVEMQ, s
	case "sqs":
		cb.Protocol, cb.Endpoint = boomerangv1.Protocol_PROTOCOL_SQS, s
	default:
		return nil, usagef("bad callback %q: the scheme must be http, https, grpc, tcp, udp, nats, amqp, amqps, activemq, activemqs or sqs", s)
	}
	return cb, nil
}

// callbackString prints a callback the way parseCallback reads it.
func callbackString(cb *boomerangv1.Callback) string {
	if cb == nil || cb.GetEndpoint() == "" {
		return ""
	}
	s := cb.GetEndpoint()
	switch cb.GetProtocol() {
	case boomerangv1.Protocol_PROTOCOL_GRPC:
		s = "grpc://" + s
	case boomerangv1.Protocol_PROTOCOL_TCP:
		s = "tcp://" + s
	case boomerangv1.Protocol_PROTOCOL_UDP:
		s = "udp://" + s
	}
	if cb.GetTimeoutMs() > 0 {
		s += " (timeout " + humanDuration(time.Duration(cb.GetTimeoutMs())*time.Millisecond) + ")"
	}
	if cb.GetPool() != "" {
		s += " (pool " + cb.GetPool() + ")"
	}
	return s
}

package delivery

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Effective is the callback a task is delivered to: its own override field
// by field where set (a protocol other than UNSPECIFIED, a non-empty
// endpoint or pool, a positive timeout), else its client's. It returns nil
// when neither has a callback.
func Effective(task, client *storepb.Callback) *storepb.Callback {
	switch {
	case task == nil && client == nil:
		return nil
	case task == nil:
		return client
	case client == nil:
		return task
	}
	out := &storepb.Callback{Protocol: client.Protocol, Endpoint: client.Endpoint, TimeoutMs: client.TimeoutMs, Pool: client.Pool}
	if task.Protocol != storepb.Protocol_PROTOCOL_UNSPECIFIED {
		out.Protocol = task.Protocol
	}
	if task.Endpoint != "" {
		out.Endpoint = task.Endpoint
	}
	if task.TimeoutMs > 0 {
		out.TimeoutMs = task.TimeoutMs
	}
	if task.Pool != "" {
		out.Pool = task.Pool
	}
	return out
}

// ValidateCallback checks an effective callback (see Effective) before it
// is stored: for a client's default callback pass payloadLen 0, for a task
// the effective callback of the task over its client and the payload's
// length. A nil or all-zero callback is valid: there is nothing to check,
// and deliveries fail with ErrNoCallback until one is set. Errors are
// *scheduler.FieldError naming "callback.protocol", "callback.endpoint",
// "callback.timeout_ms", "callback.pool" or, for a UDP payload over
// MaxUDPPayload, "payload".
func ValidateCallback(cb *storepb.Callback, payloadLen int) error {
	if cb == nil || (cb.Protocol == storepb.Protocol_PROTOCOL_UNSPECIFIED && cb.Endpoint == "" && cb.TimeoutMs == 0 && cb.Pool == "") {
		return nil
	}
	switch {
	case cb.TimeoutMs < 0 || cb.TimeoutMs > MaxTimeout.Milliseconds():
		return fieldError("callback.timeout_ms", "must be between 0 (the server default) and %d, got %d", MaxTimeout.Milliseconds(), cb.TimeoutMs)
	case len(cb.Pool) > MaxPoolNameLen || strings.ContainsRune(cb.Pool, 0):
		return fieldError("callback.pool", "must be at most %d bytes without NUL", MaxPoolNameLen)
	case cb.Protocol == storepb.Protocol_PROTOCOL_UNSPECIFIED:
		return fieldError("callback.protocol", "is required: HTTP, GRPC, TCP, UDP, NATS, AMQP, ACTIVEMQ or SQS")
	}
	if _, ok := storepb.Protocol_name[int32(cb.Protocol)]; !ok {
		return fieldError("callback.protocol", "unknown protocol %d", cb.Protocol)
	}
	if err := checkEndpoint(cb.Protocol, cb.Endpoint); err != nil {
		return fieldError("callback.endpoint", "%s", err.Error())
	}
	if cb.Protocol == storepb.Protocol_PROTOCOL_UDP && payloadLen > MaxUDPPayload {
		return fieldError("payload", "must be at most %d bytes for UDP callbacks (one datagram), got %d", MaxUDPPayload, payloadLen)
	}
	return nil
}

func fieldError(field, rule string, args ...any) error {
	return &scheduler.FieldError{Field: field, Rule: fmt.Sprintf(rule, args...)}
}

// checkEndpoint says why an endpoint cannot be used with a protocol.
func checkEndpoint(p storepb.Protocol, endpoint string) error {
	switch {
	case endpoint == "":
		return fmt.Errorf("is required")
	case len(endpoint) > MaxEndpointLen:
		return fmt.Errorf("must be at most %d bytes", MaxEndpointLen)
	case p == storepb.Protocol_PROTOCOL_HTTP:
		_, err := parseURL(endpoint)
		return err
	case p == storepb.Protocol_PROTOCOL_NATS:
		_, err := parseNATSEndpoint(endpoint)
		return err
	case p == storepb.Protocol_PROTOCOL_AMQP:
		_, err := parseAMQPEndpoint(endpoint)
		return err
	case p == storepb.Protocol_PROTOCOL_ACTIVEMQ:
		_, err := parseActiveMQEndpoint(endpoint)
		return err
	case p == storepb.Protocol_PROTOCOL_SQS:
		_, err := parseSQSEndpoint(endpoint)
		return err
	}
	return checkHostPort(endpoint)
}

// parseURL accepts absolute http and https URLs with a host.
func parseURL(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return nil, fmt.Errorf("must be an http or https URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("must be an http or https URL, got scheme %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("must be an http or https URL with a host")
	}
	if port := u.Port(); port != "" {
		if err := checkPort(port); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// checkHostPort accepts host:port with a non-empty host and a numeric
// port from 1 to 65535.
func checkHostPort(endpoint string) error {
	host, port, err := net.SplitHostPort(endpoint)
	switch {
	case err != nil:
		return fmt.Errorf("must be host:port: %v", err)
	case host == "":
		return fmt.Errorf("must be host:port with a host")
	case strings.ContainsAny(host, "/ \t\r\n"):
		return fmt.Errorf("must be host:port, got host %q", host)
	}
	return checkPort(port)
}

func checkPort(port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port must be a number from 1 to 65535, got %q", port)
	}
	return nil
}

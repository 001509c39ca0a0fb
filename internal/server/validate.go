package server

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Limits on request fields that the scheduler does not already define.
const (
	// DefaultPageSize and MaxPageSize bound list pages.
	DefaultPageSize = 100
	MaxPageSize     = 1000
	// MaxMultiplier bounds an exponential retry's growth factor.
	MaxMultiplier = 100
)

var maxDelayMs = scheduler.MaxDelay.Milliseconds()

// invalid is a validation failure naming the request field and the rule.
func invalid(field, rule string, args ...any) error {
	return &scheduler.FieldError{Field: field, Rule: fmt.Sprintf(rule, args...)}
}

// checkName checks a free-form name: at most max bytes of UTF-8 (the
// store's records hold it as a protobuf string) without NUL (the store's
// keys use it as a separator).
func checkName(field, s string, max int) error {
	switch {
	case len(s) > max:
		return invalid(field, "must be at most %d bytes, got %d", max, len(s))
	case strings.IndexByte(s, 0) >= 0:
		return invalid(field, "must not contain NUL, found one at byte %d", strings.IndexByte(s, 0))
	case !utf8.ValidString(s):
		return invalid(field, "must be valid UTF-8")
	}
	return nil
}

// checkCallbackPolicy checks a callback's endpoint, as written, against a
// callback policy. Its addresses are checked again at each connection.
func checkCallbackPolicy(p *egress.Policy, cb *storepb.Callback) error {
	if cb == nil || cb.Endpoint == "" {
		return nil
	}
	host := cb.Endpoint
	if u, err := url.Parse(cb.Endpoint); cb.Protocol == storepb.Protocol_PROTOCOL_HTTP && err == nil {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(cb.Endpoint); err == nil {
		host = h
	}
	if err := p.CheckEndpoint(host); err != nil {
		return invalid("callback.endpoint", "%s", strip(err.Error()))
	}
	return nil
}

func checkRequired(field, s string) error {
	if s == "" {
		return invalid(field, "is required")
	}
	return nil
}

func checkID(field string, id uint64) error {
	if id == 0 {
		return invalid(field, "is required")
	}
	return nil
}

func checkMode(field string, m boomerangv1.DispatchMode) error {
	if _, ok := boomerangv1.DispatchMode_name[int32(m)]; !ok {
		return invalid(field, "unknown dispatch mode %d", m)
	}
	return nil
}

func checkPayload(payload []byte, limit int) error {
	if len(payload) > limit {
		return invalid("payload", "must be at most %d bytes, got %d", limit, len(payload))
	}
	return nil
}

// checkDelay checks a relative due time in ms.
func checkDelay(field string, ms int64) error {
	if ms < 0 || ms > maxDelayMs {
		return invalid(field, "must be between 0 and %d (%v), got %d", maxDelayMs, scheduler.MaxDelay, ms)
	}
	return nil
}

// checkFireAt checks an absolute due time in Unix ms. Times in the past
// are allowed: the task is due at once.
func checkFireAt(field string, ms int64, now time.Time) error {
	switch {
	case ms <= 0:
		return invalid(field, "must be a positive Unix time in milliseconds, got %d", ms)
	case ms-now.UnixMilli() > maxDelayMs:
		return invalid(field, "must be within %v from now", scheduler.MaxDelay)
	}
	return nil
}

func checkInterval(field string, ms int64) error {
	if ms < 0 || ms > maxDelayMs {
		return invalid(field, "must be between 0 (once) and %d, got %d", maxDelayMs, ms)
	}
	return nil
}

// checkRetry checks a retry policy; fields are named under prefix.
func checkRetry(prefix string, r *boomerangv1.RetryPolicy) error {
	if r == nil {
		return nil
	}
	switch {
	case boomerangv1.Backoff_name[int32(r.Backoff)] == "":
		return invalid(prefix+"backoff", "unknown backoff %d", r.Backoff)
	case r.InitialIntervalMs < 0 || r.InitialIntervalMs > maxDelayMs:
		return invalid(prefix+"initial_interval_ms", "must be between 0 and %d, got %d", maxDelayMs, r.InitialIntervalMs)
	case r.MaxIntervalMs < 0 || r.MaxIntervalMs > maxDelayMs:
		return invalid(prefix+"max_interval_ms", "must be between 0 and %d, got %d", maxDelayMs, r.MaxIntervalMs)
	case r.MaxIntervalMs > 0 && r.MaxIntervalMs < r.InitialIntervalMs:
		return invalid(prefix+"max_interval_ms", "must not be below initial_interval_ms (%d), got %d", r.InitialIntervalMs, r.MaxIntervalMs)
	case math.IsNaN(r.Multiplier) || r.Multiplier != 0 && (r.Multiplier < 1 || r.Multiplier > MaxMultiplier):
		return invalid(prefix+"multiplier", "must be 0 (the default) or between 1 and %d, got %g", MaxMultiplier, r.Multiplier)
	case math.IsNaN(r.Jitter) || r.Jitter < 0 || r.Jitter > 1:
		return invalid(prefix+"jitter", "must be between 0 and 1, got %g", r.Jitter)
	case r.MaxAttempts > scheduler.MaxAttempts:
		return invalid(prefix+"max_attempts", "must be at most %d, got %d", scheduler.MaxAttempts, r.MaxAttempts)
	}
	return nil
}

// checkCallbackOverride checks what the effective callback does not show
// of a task's override: a negative timeout would be ignored silently.
func checkCallbackOverride(c *boomerangv1.Callback) error {
	switch {
	case c.GetTimeoutMs() < 0:
		return invalid("callback.timeout_ms", "must not be negative, got %d", c.GetTimeoutMs())
	case !utf8.ValidString(c.GetEndpoint()):
		return invalid("callback.endpoint", "must be valid UTF-8")
	case !utf8.ValidString(c.GetPool()):
		return invalid("callback.pool", "must be valid UTF-8")
	}
	return nil
}

func checkDeadLetterPolicy(p *boomerangv1.DeadLetterPolicy) error {
	if ms := p.GetRetentionMs(); ms < 0 || ms > maxDelayMs {
		return invalid("dead_letters.retention_ms", "must be between 0 (keep until deleted) and %d (%v), got %d", maxDelayMs, scheduler.MaxDelay, ms)
	}
	return nil
}

// pageSize turns a requested page size into a limit.
func pageSize(n uint32) (int, error) {
	switch {
	case n == 0:
		return DefaultPageSize, nil
	case n > MaxPageSize:
		return 0, invalid("page_size", "must be at most %d, got %d", MaxPageSize, n)
	}
	return int(n), nil
}

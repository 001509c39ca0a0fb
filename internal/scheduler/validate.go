package scheduler

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Limits on request fields.
const (
	MaxClientLen         = 128
	MaxGroupLen          = 256
	MaxIdempotencyKeyLen = 256
	MaxAttempts          = 1000
	// MaxDelay bounds how far ahead a task may be scheduled.
	MaxDelay = 10 * 365 * 24 * time.Hour
)

func (s *Scheduler) validateRegister(req *RegisterRequest) error {
	now := s.cfg.Clock.Now()
	// Strings are stored in protobuf records, which must be UTF-8: a bad
	// one would make the store refuse the whole journal batch.
	// In a fixed order, so that a request with several bad fields is
	// always refused for the same one.
	for _, f := range [...]struct{ name, v string }{
		{"client", req.Client}, {"group", req.Group}, {"idempotency_key", req.IdempotencyKey},
		{"callback.endpoint", req.Callback.GetEndpoint()}, {"callback.pool", req.Callback.GetPool()},
		{"cron", req.Cron}, {"time_zone", req.TimeZone}, {"replace_key", req.ReplaceKey},
	} {
		if !utf8.ValidString(f.v) {
			return invalid(f.name, "must be valid UTF-8")
		}
	}
	switch {
	case req.Client == "":
		return invalid("client", "is required")
	case len(req.Client) > MaxClientLen || strings.ContainsRune(req.Client, 0):
		return invalid("client", "must be at most %d bytes without NUL", MaxClientLen)
	case len(req.Group) > MaxGroupLen || strings.ContainsRune(req.Group, 0):
		return invalid("group", "must be at most %d bytes without NUL", MaxGroupLen)
	case len(req.IdempotencyKey) > MaxIdempotencyKeyLen || strings.ContainsRune(req.IdempotencyKey, 0):
		return invalid("idempotency_key", "must be at most %d bytes without NUL", MaxIdempotencyKeyLen)
	case len(req.Payload) > s.cfg.MaxPayload:
		return invalid("payload", "must be at most %d bytes, got %d", s.cfg.MaxPayload, len(req.Payload))
	case !req.At.IsZero() && req.Delay != 0:
		return invalid("delay", "cannot be set together with an absolute due time")
	case req.Delay < 0:
		return invalid("delay", "must not be negative, got %v", req.Delay)
	case req.Delay > MaxDelay || (!req.At.IsZero() && req.At.Sub(now) > MaxDelay):
		return invalid("due time", "must be within %v from now", MaxDelay)
	case !req.At.IsZero() && req.At.UnixMilli() <= 0:
		return invalid("due time", "must be after 1970-01-01T00:00:00Z")
	case req.Interval < 0:
		return invalid("interval", "must not be negative, got %v", req.Interval)
	case req.Interval > 0 && req.Interval < s.cfg.MinInterval:
		return invalid("interval", "must be at least %v, got %v", s.cfg.MinInterval, req.Interval)
	case req.Interval > MaxDelay:
		return invalid("interval", "must be at most %v", MaxDelay)
	}
	if _, ok := storepb.DispatchMode_name[int32(req.Mode)]; !ok {
		return invalid("mode", "unknown dispatch mode %d", req.Mode)
	}
	if err := validateCron(req, now); err != nil {
		return err
	}
	if err := validateReplace(req); err != nil {
		return err
	}
	return validateRetry(req.Retry)
}

func validateRetry(r *storepb.RetryPolicy) error {
	if r == nil {
		return nil
	}
	switch {
	case r.MaxAttempts > MaxAttempts:
		return invalid("retry.max_attempts", "must be at most %d, got %d", MaxAttempts, r.MaxAttempts)
	case r.InitialIntervalMs < 0 || r.MaxIntervalMs < 0:
		return invalid("retry.interval", "must not be negative")
	case r.MaxIntervalMs > 0 && r.MaxIntervalMs < r.InitialIntervalMs:
		return invalid("retry.max_interval_ms", "must not be below initial_interval_ms")
	case r.Jitter < 0 || r.Jitter > 1:
		return invalid("retry.jitter", "must be between 0 and 1, got %g", r.Jitter)
	case r.Multiplier != 0 && r.Multiplier < 1:
		return invalid("retry.multiplier", "must be at least 1, got %g", r.Multiplier)
	}
	return nil
}

func (s *Scheduler) validateUpdate(req *UpdateRequest) error {
	now := s.cfg.Clock.Now()
	switch {
	case req.ID == 0:
		return invalid("id", "is required")
	case req.Payload == nil && req.At == nil && req.Interval == nil && req.Cron == nil:
		return invalid("update", "must change the payload, the due time, the interval or the cron schedule")
	case len(req.Payload) > s.cfg.MaxPayload:
		return invalid("payload", "must be at most %d bytes, got %d", s.cfg.MaxPayload, len(req.Payload))
	case req.At != nil && (req.At.UnixMilli() <= 0 || req.At.Sub(now) > MaxDelay):
		return invalid("due time", "must be after 1970 and within %v from now", MaxDelay)
	case req.Interval != nil && (*req.Interval < 0 || *req.Interval > MaxDelay):
		return invalid("interval", "must be between 0 and %v", MaxDelay)
	case req.Interval != nil && *req.Interval > 0 && *req.Interval < s.cfg.MinInterval:
		return invalid("interval", "must be at least %v, got %v", s.cfg.MinInterval, *req.Interval)
	}
	return validateCronUpdate(req, now)
}

package delivery

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// maxAttemptsLimit matches the scheduler's bound on a policy's attempts.
const maxAttemptsLimit = 1000

var builtinRetry = &storepb.RetryPolicy{
	Backoff:           storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL,
	InitialIntervalMs: DefaultInitialBackoff.Milliseconds(),
	MaxIntervalMs:     DefaultMaxBackoff.Milliseconds(),
	Multiplier:        DefaultMultiplier,
	Jitter:            DefaultJitter,
	MaxAttempts:       DefaultMaxAttempts,
}

// fillRetry returns a copy of p whose unset (zero) fields come from base.
// A jitter of 0 is "unset" too: a policy cannot turn off a base's jitter.
func fillRetry(p, base *storepb.RetryPolicy) *storepb.RetryPolicy {
	out := &storepb.RetryPolicy{}
	if base != nil {
		*out = storepb.RetryPolicy{
			Backoff: base.Backoff, InitialIntervalMs: base.InitialIntervalMs, MaxIntervalMs: base.MaxIntervalMs,
			Multiplier: base.Multiplier, Jitter: base.Jitter, MaxAttempts: base.MaxAttempts,
		}
	}
	if p == nil {
		return out
	}
	if p.Backoff != storepb.BackoffKind_BACKOFF_KIND_UNSPECIFIED {
		out.Backoff = p.Backoff
	}
	if p.InitialIntervalMs > 0 {
		out.InitialIntervalMs = p.InitialIntervalMs
	}
	if p.MaxIntervalMs > 0 {
		out.MaxIntervalMs = p.MaxIntervalMs
	}
	if p.Multiplier > 0 {
		out.Multiplier = p.Multiplier
	}
	if p.Jitter > 0 {
		out.Jitter = p.Jitter
	}
	if p.MaxAttempts > 0 {
		out.MaxAttempts = p.MaxAttempts
	}
	return out
}

func validatePolicy(what string, p *storepb.RetryPolicy) error {
	switch {
	case p.Backoff != storepb.BackoffKind_BACKOFF_KIND_FIXED && p.Backoff != storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL:
		return fmt.Errorf("delivery: %s: unknown backoff %v", what, p.Backoff)
	case p.InitialIntervalMs <= 0 || p.MaxIntervalMs < p.InitialIntervalMs:
		return fmt.Errorf("delivery: %s: intervals must be positive with max (%d ms) not below initial (%d ms)",
			what, p.MaxIntervalMs, p.InitialIntervalMs)
	case p.Multiplier < 1 || math.IsInf(p.Multiplier, 0):
		return fmt.Errorf("delivery: %s: multiplier must be finite and at least 1, got %g", what, p.Multiplier)
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return fmt.Errorf("delivery: %s: jitter must be between 0 and 1, got %g", what, p.Jitter)
	case p.MaxAttempts < 1 || p.MaxAttempts > maxAttemptsLimit:
		return fmt.Errorf("delivery: %s: max attempts must be between 1 and %d, got %d", what, maxAttemptsLimit, p.MaxAttempts)
	}
	return nil
}

// Backoff is the delay after the n-th failed attempt (n >= 1) of policy
// p, whose fields must all be set, given a uniform random u in [0, 1):
//
//	fixed:       base = initial
//	exponential: base = initial × multiplier^(n−1)
//	delay = min(base, max_interval) × (1 − jitter × u)
//
// Jitter only shortens the delay, so it never exceeds max_interval.
func Backoff(p *storepb.RetryPolicy, n uint32, u float64) time.Duration {
	initial := float64(p.InitialIntervalMs) * float64(time.Millisecond)
	limit := float64(p.MaxIntervalMs) * float64(time.Millisecond)
	base := initial
	if p.Backoff == storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL && n > 1 {
		base = initial * math.Pow(p.Multiplier, float64(n-1))
	}
	if base > limit || math.IsNaN(base) {
		base = limit
	}
	return time.Duration(base * (1 - p.Jitter*u))
}

// Next implements scheduler.RetryDecider. It uses the task's policy field
// by field where set, else its client's, else Config.DefaultRetry. It
// reads only memory: a client not cached (not delivered to since it was
// invalidated) contributes nothing.
func (e *Engine) Next(t *storepb.Task, attempts uint32, err error) (time.Duration, bool) {
	if err == nil {
		err = errors.New("delivery: failed")
	}
	if IsPermanent(err) {
		e.metrics.permanent.Inc()
		return 0, false
	}
	p := e.policy(t)
	if attempts >= p.MaxAttempts {
		e.metrics.exhausted.Inc()
		return 0, false
	}
	d := Backoff(p, attempts, rand.Float64())
	if se, ok := errors.AsType[*StatusError](err); ok && se.RetryAfter > d {
		d = min(se.RetryAfter, time.Duration(p.MaxIntervalMs)*time.Millisecond)
	}
	e.metrics.retries.Inc()
	return d, true
}

// policy is the effective retry policy of t.
func (e *Engine) policy(t *storepb.Task) *storepb.RetryPolicy {
	base := e.cfg.DefaultRetry
	if c := e.clients.peek(t.Client); c != nil {
		base = c.retry
	}
	if t.Retry == nil {
		return base
	}
	return fillRetry(t.Retry, base)
}

package scheduler

import (
	"time"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// RetryDecider decides what a failed attempt leads to. It is called on the
// partition loop and must be fast and free of I/O.
type RetryDecider interface {
	// Next is called after attempt number attempts of t failed with err.
	// It returns the delay before the next attempt, or retry == false to
	// move the occurrence to the dead letter queue.
	Next(t *storepb.Task, attempts uint32, err error) (delay time.Duration, retry bool)
}

// FixedRetry retries up to Attempts attempts in total, Delay apart. A
// task's own RetryPolicy, when set, overrides MaxAttempts and the delay
// (InitialIntervalMs).
type FixedRetry struct {
	Attempts uint32
	Delay    time.Duration
}

// Next implements RetryDecider.
func (f FixedRetry) Next(t *storepb.Task, attempts uint32, _ error) (time.Duration, bool) {
	limit, delay := f.Attempts, f.Delay
	if p := t.GetRetry(); p != nil {
		if p.MaxAttempts > 0 {
			limit = p.MaxAttempts
		}
		if p.InitialIntervalMs > 0 {
			delay = time.Duration(p.InitialIntervalMs) * time.Millisecond
		}
	}
	if attempts >= limit {
		return 0, false
	}
	return delay, true
}

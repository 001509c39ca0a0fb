package auth

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/time/rate"
)

// loginBudget bounds the work that logins, which anyone may attempt,
// make the server do: attempts per source, refused at once beyond their
// rate, and password checks in all, which wait up to a bound for their
// turn and are refused beyond it. Both are token buckets on the injected
// clock.
type loginBudget struct {
	checks  *rate.Limiter // password checks per second, server-wide
	maxWait time.Duration // negative: never wait
	perSec  rate.Limit    // a source's attempts per second
	burst   int
	limit   int // sources remembered

	mu      sync.Mutex
	sources map[string]*rate.Limiter

	estimate atomic.Int64 // nanoseconds one verification takes, a moving average
}

// loginBurstSeconds is how many seconds' worth of attempts a source may
// make at once, and of password checks the server may run at once.
const loginBurstSeconds = 5

func newLoginBudget(cfg *Config, measured time.Duration) *loginBudget {
	b := &loginBudget{
		checks:  rate.NewLimiter(rate.Limit(cfg.LoginChecksPerSecond), max(int(cfg.LoginChecksPerSecond*loginBurstSeconds), 1)),
		maxWait: cfg.MaxLoginWait,
		perSec:  rate.Limit(cfg.LoginsPerSource),
		burst:   max(int(cfg.LoginsPerSource*loginBurstSeconds), 1),
		limit:   cfg.MaxThrottled,
		sources: map[string]*rate.Limiter{},
	}
	b.estimate.Store(int64(max(measured, time.Microsecond)))
	return b
}

// take takes one attempt from source's share, refusing at once beyond
// it, then one password check from the server's budget, waiting up to
// maxWait for it. It returns ErrLoginBusy when either is spent.
func (b *loginBudget) take(source string, clock clockwork.Clock) error {
	now := clock.Now()
	if !b.source(SourceKey(source)).AllowN(now, 1) {
		return ErrLoginBusy
	}
	r := b.checks.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	switch {
	case !r.OK() || delay > max(b.maxWait, 0):
		r.CancelAt(now)
		return ErrLoginBusy
	case delay > 0:
		clock.Sleep(delay)
	}
	return nil
}

// cost is what one verification is expected to take.
func (b *loginBudget) cost() time.Duration { return time.Duration(b.estimate.Load()) }

// observe folds a verification's duration into the estimate.
func (b *loginBudget) observe(d time.Duration) {
	old := b.estimate.Load()
	b.estimate.Store(old + (int64(d)-old)/8)
}

func (b *loginBudget) source(key string) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.sources[key]
	if l == nil {
		if len(b.sources) >= b.limit {
			// A flood of sources: start over rather than grow. A source
			// forgotten early gets a fresh burst, which the server-wide
			// budget still bounds.
			clear(b.sources)
		}
		l = rate.NewLimiter(b.perSec, b.burst)
		b.sources[key] = l
	}
	return l
}

package auth

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// loginBudget bounds the work that logins, which anyone may attempt,
// make the server do: password hashing in all, at most a share of the
// CPU, and attempts per source, so that one source cannot spend the whole
// share. Both are token buckets on the injected clock.
type loginBudget struct {
	hashing *rate.Limiter // tokens are microseconds of hashing
	perSec  rate.Limit    // a source's attempts per second
	burst   int
	limit   int // sources remembered

	mu      sync.Mutex
	sources map[string]*rate.Limiter

	estimate atomic.Int64 // nanoseconds one verification takes, a moving average
}

func newLoginBudget(cfg *Config, measured time.Duration) *loginBudget {
	perSecond := cfg.LoginCPU * float64(cfg.MaxConcurrentHashes) * 1e6
	b := &loginBudget{
		hashing: rate.NewLimiter(rate.Limit(perSecond), max(int(perSecond), 1)),
		perSec:  rate.Limit(cfg.LoginsPerSource),
		burst:   max(int(cfg.LoginsPerSource*loginBurstSeconds), 1),
		limit:   cfg.MaxThrottled,
		sources: map[string]*rate.Limiter{},
	}
	b.estimate.Store(int64(max(measured, time.Microsecond)))
	return b
}

// loginBurstSeconds is how many seconds' worth of attempts a source may
// make at once.
const loginBurstSeconds = 5

// allow takes one attempt from source and one verification's worth of
// hashing from the budget, or reports that either is spent.
func (b *loginBudget) allow(source string, now time.Time) bool {
	if !b.source(SourceKey(source)).AllowN(now, 1) {
		return false
	}
	return b.hashing.AllowN(now, int(b.cost()/time.Microsecond))
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
			// forgotten early gets a fresh burst, which the hashing
			// budget still bounds.
			clear(b.sources)
		}
		l = rate.NewLimiter(b.perSec, b.burst)
		b.sources[key] = l
	}
	return l
}

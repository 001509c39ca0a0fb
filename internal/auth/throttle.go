package auth

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// throttle slows down password guessing per client id and source: after
// a failed login, attempts for the same id from the same source are
// refused until a backoff has passed, without running the KDF. The
// backoff doubles with each consecutive failure up to a maximum; a
// success, or a quiet period of twice the maximum, resets it. Failures
// from one source never hold back another, so guessing a client's
// password cannot lock the client out.
type throttle struct {
	base, max time.Duration
	limit     int

	mu      sync.Mutex
	entries map[string]*failures
	running map[string]chan struct{} // attempts under way, one per key, closed when it ends
}

type failures struct {
	count int
	until time.Time // attempts before this are refused
}

func newThrottle(cfg *Config) *throttle {
	return &throttle{base: max(cfg.LoginBackoff, time.Millisecond), max: cfg.MaxLoginBackoff, limit: cfg.MaxThrottled,
		entries: map[string]*failures{}, running: map[string]chan struct{}{}}
}

// throttleKey names a client id as tried from a source.
func throttleKey(client, source string) string { return client + "\x00" + SourceKey(source) }

// SourceKey is the part of an address that names one source: an IPv4
// address, or an IPv6 address's /64, which one host usually holds whole.
func SourceKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if a = a.Unmap(); a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// begin waits for the attempt for key under way, if any, then returns
// how long key must still wait before its next attempt, or zero, and
// then the attempt may go ahead until end. Attempts for one key run one
// at a time: a burst of guesses sent at once costs one check before the
// first failure throttles the rest, while a pool of connections logging
// in together with the right password only waits its turn. now gives
// the time once the wait is over.
func (t *throttle) begin(key string, now func() time.Time) time.Duration {
	t.mu.Lock()
	for {
		running, busy := t.running[key]
		if !busy {
			break
		}
		t.mu.Unlock()
		<-running
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	if f := t.entries[key]; f != nil && now().Before(f.until) {
		return f.until.Sub(now())
	}
	t.running[key] = make(chan struct{})
	return 0
}

// end ends the attempt begin let go ahead, letting the next one for key
// in.
func (t *throttle) end(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.running[key])
	delete(t.running, key)
}

// fail records a failed attempt and returns the backoff it imposes.
func (t *throttle) fail(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.entries[key]
	if f == nil {
		t.makeRoom(now)
		f = &failures{}
		t.entries[key] = f
	}
	if t.forgotten(f, now) {
		f.count = 0
	}
	f.count++
	wait := t.max
	if shift := f.count - 1; shift < 32 && t.base<<shift < t.max {
		wait = t.base << shift
	}
	f.until = now.Add(wait)
	return wait
}

// succeed clears key's failures.
func (t *throttle) succeed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, key)
}

// forgotten reports whether f's failures are old enough to start over.
func (t *throttle) forgotten(f *failures, now time.Time) bool {
	return now.Sub(f.until) >= 2*t.max
}

// makeRoom keeps the table within its limit: first by dropping forgotten
// entries, then, under a flood of distinct ids, an arbitrary one.
func (t *throttle) makeRoom(now time.Time) {
	if len(t.entries) < t.limit {
		return
	}
	for id, f := range t.entries {
		if t.forgotten(f, now) {
			delete(t.entries, id)
		}
	}
	for id := range t.entries {
		if len(t.entries) < t.limit {
			break
		}
		delete(t.entries, id)
	}
}

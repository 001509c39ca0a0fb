// Package testwait waits, in tests, for conditions that nothing signals:
// a replica's role, a cluster's view, a count another process reports.
// It checks the condition on a ticker until it holds or a limit passes,
// so a test waits exactly as long as the condition takes, and fails,
// naming what it waited for, when it never holds.
package testwait

import (
	"testing"
	"time"
)

// Every is how often a condition is checked.
const Every = 2 * time.Millisecond

// For waits until cond holds, failing tb after limit.
func For(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Until(limit, cond) {
		tb.Fatalf("timed out after %v waiting for %s", limit, what)
	}
}

// Err waits until cond returns nil, failing tb after limit with the last
// error cond returned.
func Err(tb testing.TB, limit time.Duration, what string, cond func() error) {
	tb.Helper()
	var err error
	if !Until(limit, func() bool { err = cond(); return err == nil }) {
		tb.Fatalf("timed out after %v waiting for %s: %v", limit, what, err)
	}
}

// Until waits until cond holds or limit passes, and reports whether it
// held: for goroutines other than the test's, which must not fail it.
func Until(limit time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}

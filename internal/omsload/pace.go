package omsload

import "time"

// waitUntil sleeps until at ns past base.
//
// Go's timers can wake a sleeping process up to about a millisecond late,
// so an open-loop sender may release a few orders together; their latency
// from schedule includes that lateness, and "from send" does not. Finer
// sleeps (nanosleep, spinning) were tried: nanosleep holds the sender's
// processor in a system call, which delayed the receivers far more than
// it saved, and spinning takes a core from the server on a small machine.
func waitUntil(base time.Time, at int64) {
	if d := time.Duration(at - int64(time.Since(base))); d > 0 {
		time.Sleep(d)
	}
}

package oms

import "time"

// Clock is the server's source of time. Tests replace it to fire
// execution timers on demand.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f on its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func())
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

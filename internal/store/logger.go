package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger adapts Pebble's logger to slog.
//
// Pebble calls Fatalf when it cannot continue, most importantly when a WAL
// write or fsync fails during a commit; its default logger then exits the
// process. Returning from Fatalf instead would let DB.Apply report success
// for a batch that never reached the disk, so Fatalf panics with a
// fatalError. Store methods on the caller's goroutine (Open, Commit, Close)
// recover that value, mark the store failed and return an error; on one of
// Pebble's background goroutines it ends the process, as Pebble intends.
type pebbleLogger struct {
	log *slog.Logger
}

var _ pebble.Logger = pebbleLogger{}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "component", "pebble", "fatal", true)
	panic(fatalError{msg: msg})
}

// fatalError is the panic value of pebbleLogger.Fatalf.
type fatalError struct{ msg string }

func (e fatalError) Error() string { return "pebble: " + e.msg }

// recoverFatal turns a fatalError panic into *err; other panics go on.
func recoverFatal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	fe, ok := r.(fatalError)
	if !ok {
		panic(r)
	}
	*err = fmt.Errorf("%w: %w", ErrFailed, fe)
}

// eventListener logs Pebble's events through l. Data corruption found in
// the background is counted and logged, not fatal: the read or compaction
// that found it fails with a corruption error, which callers see as
// ErrCorrupt. The events around a new read state poke pins (pin.go).
func eventListener(l pebbleLogger, c *counters, pins *pinner) *pebble.EventListener {
	el := pebble.MakeLoggingEventListener(l)
	el.DataCorruption = func(info pebble.DataCorruptionInfo) {
		c.corruptions.Add(1)
		l.Errorf("%s", info)
	}
	walCreated, flushBegin, flushEnd := el.WALCreated, el.FlushBegin, el.FlushEnd
	compactionBegin, compactionEnd := el.CompactionBegin, el.CompactionEnd
	el.WALCreated = func(info pebble.WALCreateInfo) { walCreated(info); pins.poke() }
	el.FlushBegin = func(info pebble.FlushInfo) { flushBegin(info); pins.poke() }
	el.FlushEnd = func(info pebble.FlushInfo) { flushEnd(info); pins.poke() }
	el.CompactionBegin = func(info pebble.CompactionInfo) { compactionBegin(info); pins.poke() }
	el.CompactionEnd = func(info pebble.CompactionInfo) { compactionEnd(info); pins.poke() }
	return &el
}

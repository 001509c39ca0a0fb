package store

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble's reads go through a read state: the current version of its
// tables and its memtables, counted by every iterator open on it. When a
// flush or compaction installs a new one, the goroutine that drops the
// last reference to the old one deletes the tables no version needs any
// more, and first evicts each of their blocks from the block cache,
// yielding the processor (runtime.Gosched) after every five. If that is a
// partition's loop closing an iterator, the loop is held up for as long as
// the eviction takes: on two busy cores, where each yield waits up to a
// time slice of a compaction's goroutine, 0.1 – 0.4 s.
//
// The pinner keeps that work off the callers' goroutines: it holds an
// iterator (a pin) on each read state it sees, and closes a pin only once a
// newer one has been held for pinOverlap, by when the reads that began on
// the old state have ended. The last reference is then its own, and so is
// the eviction. Pebble's events around every installation (a WAL created
// with a new memtable, a flush or compaction beginning or ending) poke it,
// and for pinBurst after each poke it takes a pin every pinStep, so that a
// state installed at about that time is held from its start. Between
// bursts it refreshes its pin every pinRefresh, and after pinIdle without
// a poke it lets go of everything: an idle store then holds no memtable or
// table longer than that.
const (
	pinStep    = 5 * time.Millisecond
	pinBurst   = 100 * time.Millisecond
	pinRefresh = time.Second
	pinOverlap = 250 * time.Millisecond
	pinIdle    = 10 * time.Second
)

type pinner struct {
	db      *pebble.DB
	overlap time.Duration // pinOverlap, or a test's
	poked   chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

type pin struct {
	it *pebble.Iterator
	at time.Time // when it was taken
}

func newPinner(overlap time.Duration) *pinner {
	return &pinner{overlap: overlap, poked: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// poke says that Pebble is about to install, or has just installed, a new
// read state. It never blocks.
func (p *pinner) poke() {
	select {
	case p.poked <- struct{}{}:
	default:
	}
}

// start runs the pinner on db until close.
func (p *pinner) start(db *pebble.DB) {
	p.db = db
	go p.run()
}

// close closes every pin and stops the pinner; it must come before the
// database is closed.
func (p *pinner) close() {
	if p.db == nil {
		return
	}
	close(p.stop)
	<-p.done
}

func (p *pinner) run() {
	defer close(p.done)
	var pins []pin
	defer func() {
		for _, x := range pins {
			_ = x.it.Close()
		}
	}()
	timer := time.NewTimer(0)
	<-timer.C
	var burstUntil, lastPoke time.Time
	for {
		select {
		case <-p.stop:
			return
		case <-p.poked:
			now := time.Now()
			burstUntil, lastPoke = now.Add(pinBurst), now
		case <-timer.C:
		}
		now := time.Now()
		if now.Sub(lastPoke) > pinIdle {
			pins = p.release(pins, len(pins))
			continue // wait for a poke
		}
		if len(pins) == 0 || now.Before(burstUntil) || now.Sub(pins[len(pins)-1].at) >= pinRefresh {
			if it, err := p.db.NewIter(&pebble.IterOptions{}); err == nil {
				pins = append(pins, pin{it: it, at: now})
			}
		}
		// A pin goes once the next has been held for p.overlap.
		n := 0
		for n+1 < len(pins) && now.Sub(pins[n+1].at) >= p.overlap {
			n++
		}
		pins = p.release(pins, n)
		timer.Reset(p.wait(now, burstUntil, pins))
	}
}

// release closes the first n pins and returns the others.
func (p *pinner) release(pins []pin, n int) []pin {
	for _, x := range pins[:n] {
		_ = x.it.Close()
	}
	left := copy(pins, pins[n:])
	clear(pins[left:])
	return pins[:left]
}

// wait is how long the pinner may sleep: until its next pin in a burst,
// the next release, the next refresh, or going idle.
func (p *pinner) wait(now, burstUntil time.Time, pins []pin) time.Duration {
	if now.Before(burstUntil) {
		return pinStep
	}
	d := pinRefresh
	if len(pins) > 0 {
		d = min(d, pins[len(pins)-1].at.Add(pinRefresh).Sub(now))
	}
	if len(pins) > 1 {
		d = min(d, pins[1].at.Add(p.overlap).Sub(now))
	}
	return max(d, pinStep)
}

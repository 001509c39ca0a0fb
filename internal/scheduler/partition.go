package scheduler

import (
	"container/list"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/dispatch"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
	"github.com/boomerangd/boomerang/internal/wheel"
)

// partition is one loop goroutine and everything it alone owns: its
// shards' id counters, their part of the wheel, the tasks fired from them,
// their undurable decisions and the open journal batch.
type partition struct {
	s      *Scheduler
	index  int
	shards []uint16
	inbox  inbox

	wheel  *wheel.Wheel[uint64]
	timers map[uint64]wheel.Timer // tasks in the wheel, by id: due or retry timers

	// flights are fired tasks until their outcome is durable: queued in
	// the group gate, delivering, or waiting for a retry.
	flights map[uint64]*flight
	// blocked holds, per blocked group, the engine task that keeps the
	// group gate shut.
	blocked map[string]*flight
	// backlog holds fired tasks the engine refused (ring full), in order.
	backlog []*flight

	// pending overlays decisions that are in the journal but not yet
	// applied: the task as decided, or nil once deleted.
	pending map[uint64]*pendingTask
	// pendingDLs overlays undurable changes to dead letters the same way.
	pendingDLs map[uint64]*pendingDL
	groups     map[string]*groupState // group records in use, blocked, or idle in idleGroups
	idleGroups list.List              // keys of cached groups no decision holds, most recent first
	idem       map[string]*idemWait   // registrations by idempotency key, in the journal

	nextID      map[uint16]uint64 // per-shard id counters (low 48 bits)
	loadedUntil int64             // tasks due before this (Unix ms) are in the wheel
	nextLoad    time.Time

	open      *journalBatch
	inJournal int // batches handed to the journal and not yet back
	journalCh chan *journalBatch

	fired    []firedTimer
	toRead   []uint64                 // ids of fired tasks to read together
	read     map[uint64]*storepb.Task // their records (nil: none), during advance
	unread   int                      // messages of the current batch not yet run
	gauges   gauges
	stopping bool
	done     chan struct{}
}

type firedTimer struct {
	due int64
	id  uint64
}

// flightState is where a fired task is.
type flightState uint8

const (
	flightQueued flightState = iota
	flightDelivering
	flightSettling // outcome decided, waiting for the journal
	flightRetrying
	flightBlocked // holds its group's gate after a BLOCK_ON_ERROR failure
)

type flight struct {
	p       *partition
	id      uint64
	key     dispatch.Key
	mode    dispatch.Mode
	group   string // engine key of a gated group, "" otherwise
	task    *storepb.Task
	state   flightState
	stale   bool // the task changed while queued: read it again at start
	waiting bool // let through (or due for retry) while a change was undurable
	engine  dispatch.Task[*flight]

	// A blocked head restored at recovery is submitted before its group's
	// first task; started reports whether the engine has run it since.
	started bool
	skipped bool
}

type pendingTask struct {
	task *storepb.Task // nil: deleted
	refs int
}

type pendingDL struct {
	dl   *storepb.DeadLetter // nil: deleted
	refs int
}

type groupState struct {
	rec  *storepb.Group
	refs int
	idle *list.Element // in idleGroups while no decision holds it
}

type idemWait struct {
	task    *storepb.Task
	waiters []func(result)
}

// result is what a loop operation answers.
type result struct {
	view    TaskView
	created bool
	err     error
}

func newPartition(s *Scheduler, index int) (*partition, error) {
	now := s.cfg.Clock.Now()
	w, err := wheel.New[uint64](wheel.Config{Tick: s.cfg.Tick}, now)
	if err != nil {
		return nil, err
	}
	p := &partition{
		s:          s,
		index:      index,
		wheel:      w,
		timers:     make(map[uint64]wheel.Timer),
		flights:    make(map[uint64]*flight),
		blocked:    make(map[string]*flight),
		pending:    make(map[uint64]*pendingTask),
		pendingDLs: make(map[uint64]*pendingDL),
		read:       make(map[uint64]*storepb.Task),
		groups:     make(map[string]*groupState),
		idem:       make(map[string]*idemWait),
		nextID:     make(map[uint16]uint64),
		journalCh:  make(chan *journalBatch, journalDepth),
		done:       make(chan struct{}),
	}
	for sh := index; sh < store.Shards; sh += s.cfg.Partitions {
		p.shards = append(p.shards, uint16(sh))
	}
	p.inbox.init(s.cfg.MaxInbox)
	p.open = newJournalBatch(s.cfg.Store)
	return p, nil
}

func (p *partition) now() time.Time { return p.s.cfg.Clock.Now() }

// run is the partition loop.
func (p *partition) run(stop, abort <-chan struct{}) {
	defer close(p.done)
	journalDone := make(chan struct{})
	go func() {
		defer close(journalDone)
		p.journal()
	}()
	defer func() {
		// The store may be closed as soon as the loop is gone: let the
		// journal finish the commit it may be in first.
		close(p.journalCh)
		<-journalDone
	}()
	timer := p.s.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		msgs := p.inbox.take()
		p.publish(len(msgs))
		for i, m := range msgs {
			p.unread = len(msgs) - i - 1
			m()
		}
		p.unread = 0
		if p.s.failed() != nil {
			return
		}
		p.flush()
		if !p.stopping {
			p.submitBacklog()
			p.advance()
			p.load()
		}
		if p.stopping && p.drained() {
			return
		}
		if !p.sleep(timer, stop, abort) {
			return
		}
	}
}

// sleep waits for a message, the next timer or load, or stop. It reports
// false when the loop must exit at once.
func (p *partition) sleep(timer clockwork.Timer, stop, abort <-chan struct{}) bool {
	wake := p.nextLoad
	if next, ok := p.wheel.NextExpiry(); ok && next.Before(wake) {
		wake = next
	}
	if len(p.backlog) > 0 {
		wake = p.now().Add(p.s.cfg.Tick)
	}
	if p.stopping {
		wake = p.now().Add(time.Hour)
		stop = nil // seen; now wait only for the attempts under way
	}
	timer.Reset(max(wake.Sub(p.now()), 0))
	select {
	case <-p.inbox.signal:
	case <-timer.Chan():
	case <-stop:
		p.stopping = true
	case <-abort:
		return false
	}
	return true
}

// drained reports that a stopping partition has nothing left that it
// must finish: no attempt under way and nothing waiting for the journal.
func (p *partition) drained() bool {
	if p.inJournal > 0 || p.open.len() > 0 {
		return false
	}
	for _, f := range p.flights {
		if f.state == flightDelivering || f.state == flightSettling {
			return false
		}
	}
	return true
}

// inbox is the partition's queue of work from other goroutines: API
// requests (bounded) and internal events (journal, engine and delivery
// callbacks, never refused).
type inbox struct {
	mu       sync.Mutex
	msgs     []func()
	spare    []func()
	requests int
	limit    int
	closed   bool
	signal   chan struct{}
}

// init makes a closed inbox: requests are refused until open.
func (in *inbox) init(limit int) {
	in.limit = limit
	in.closed = true
	in.signal = make(chan struct{}, 1)
}

func (in *inbox) open() {
	in.mu.Lock()
	in.closed = false
	in.mu.Unlock()
}

// request queues an API request, refusing it when the inbox is full or
// closed.
func (in *inbox) request(m func()) error {
	in.mu.Lock()
	switch {
	case in.closed:
		in.mu.Unlock()
		return ErrClosed
	case in.requests >= in.limit:
		in.mu.Unlock()
		return ErrBusy
	}
	in.requests++
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	in.notify()
	return nil
}

// post queues an internal event.
func (in *inbox) post(m func()) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	in.notify()
}

func (in *inbox) notify() {
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

func (in *inbox) take() []func() {
	in.mu.Lock()
	msgs := in.msgs
	clear(in.spare) // drop the closures run last time
	in.msgs = in.spare[:0]
	in.spare = msgs
	in.requests = 0
	in.mu.Unlock()
	return msgs
}

func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}

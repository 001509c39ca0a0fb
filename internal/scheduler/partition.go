package scheduler

import (
	"container/list"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
	"github.com/boomerangd/boomerang/internal/wheel"
)

// partition is one loop goroutine and everything it alone owns: its
// shards' state as their replicas apply it, and for the shards this node
// leads, their part of the wheel, running groups, started tasks and
// undurable decisions.
type partition struct {
	s      *Scheduler
	index  int
	shards []uint16
	inbox  inbox

	// The wheel runs on the partition's clock (see wall), in which due
	// times are Unix ms.
	wheel   *wheel.Wheel[timer]
	started time.Time              // the clock at creation: monotonic origin
	monoAt  time.Duration          // monotonic time of the last wall reading
	wallNs  int64                  // the last wall reading, Unix ns; never goes back
	timers  map[uint64]wheel.Timer // ungrouped tasks' due timers and every retry timer, by task id

	flights  map[uint64]*flight   // started tasks until they settle: delivering, settling, retrying
	runs     map[string]*groupRun // groups with something to do, by store.GroupRef
	ready    []readyItem          // due work waiting for a delivery slot, in order
	starting []uint64             // due tasks of no group taking a slot, to read and start
	slots    int                  // delivery slots: attempts this partition may have under way
	busy     int                  // attempts under way
	blocked  int                  // groups in runBlocked

	// pending overlays decisions that are proposed but not yet applied:
	// the task as decided, or nil once deleted.
	pending map[uint64]*pendingTask
	// tasks holds records as the partition's applies left them, read
	// before the store (current); cleared when a shard's state is
	// replaced or dropped (loadShard).
	tasks *store.TaskCache
	// waiters run once the pending decision on a task is applied.
	waiters map[uint64]func()
	// pendingDLs overlays undurable changes to dead letters the same way.
	pendingDLs map[uint64]*pendingDL
	recs       map[string]*groupRec // group records in use, blocked, or idle in idleRecs
	idleRecs   list.List            // keys of cached records no decision holds, most recent first
	idem       map[string]*idemWait // registrations by idempotency key, not yet applied
	idemKeys   map[uint16]int       // idempotency keys remembered, per led shard
	replacing  map[string]uint64    // new tasks by replace key (replaceRef), not yet applied

	leading       map[uint16]uint64    // shards this node leads, and the term
	unleased      map[uint16][]*flight // started attempts waiting for their shard's lease
	lastID        map[uint16]uint64    // the highest id in each shard's state
	issued        map[uint16]uint64    // a led shard's last id counter issued
	appliedIndex  map[uint16]uint64    // each shard's state includes its log up to here
	state         *store.Batch         // the apply batch, reused (stateBatch)
	behind        []replica.Committed  // followed shards' entries, gathered (follow.go)
	behindSince   time.Time            // monotonic: when the oldest of them came
	behindEntries int                  // the entries in behind
	followers     *followWorker        // applies what was gathered (follow.go)
	loadedUntil   int64                // tasks due before this (Unix ms) are in the wheel
	readThrough   time.Time            // wheel time through which due tasks were gathered to read ahead
	toRead        []uint64             // their ids, ascending (readAhead)
	readNext      int                  // toRead[readNext:] are still to be read
	nextLoad      time.Time            // monotonic
	nextSweep     time.Time            // monotonic

	cur       *pendingCmd              // the command of the decision under way
	open      map[uint16][]*pendingCmd // decided this turn, by shard
	proposed  map[uint16][]*pendingCmd // proposed, not yet applied, in order
	proposals uint64                   // proposal numbers issued
	// lingerUntil is when the first commands held back (hold) must be
	// proposed, on the system's monotonic clock; zero: none are held.
	// lingerTimer wakes the loop then.
	lingerUntil time.Time
	lingerTimer *time.Timer
	anywhere    int32 // the stint's shard for tasks that may go anywhere, or -1 (place)
	placed      int   // the bytes placed on it in the stint

	fired    []firedTimer
	unread   int // messages of the current batch not yet run
	gauges   gauges
	stopping bool
	done     chan struct{}
}

// timer is what the wheel holds: a task's due or retry timer (id), or a
// group's wake-up (run).
type timer struct {
	id  uint64
	run *groupRun
}

type firedTimer struct {
	at time.Time // wheel time
	timer
}

// readyItem is due work waiting for a delivery slot: an ungrouped task by
// id, or a group whose head is due.
type readyItem struct {
	id  uint64
	run *groupRun
}

// flightState is where a started task is.
type flightState uint8

const (
	flightDelivering flightState = iota
	flightSettling               // outcome decided, waiting to be applied
	flightRetrying
)

// flight is a started task until its occurrence settles. A grouped
// task's flight is its group's head and holds the group.
type flight struct {
	id    uint64
	run   *groupRun // nil for a task of no ordered group
	state flightState
	// task is the record delivered, while delivering or settling; nil
	// while retrying (read again for the next attempt).
	task *storepb.Task
	held bool // delivering, but waiting for its shard's lease
	// startedMs is when the attempt under way was handed to the deliverer
	// (wall), which a rate limit counts once its outcome is recorded.
	startedMs int64
}

type pendingTask struct {
	task *storepb.Task // nil: deleted
	refs int
}

type pendingDL struct {
	dl   *storepb.DeadLetter // nil: deleted
	refs int
}

type idemWait struct {
	task    *storepb.Task
	waiters []func(result)
}

// result is what a loop operation answers.
type result struct {
	view    TaskView
	created bool
	count   int
	err     error
}

func newPartition(s *Scheduler, index int) (*partition, error) {
	started := s.cfg.Clock.Now()
	wallNs := started.Add(s.cfg.wallSkew()).UnixNano()
	w, err := wheel.New[timer](wheel.Config{Tick: s.cfg.Tick}, time.Unix(0, wallNs))
	if err != nil {
		return nil, err
	}
	p := &partition{
		s:            s,
		index:        index,
		wheel:        w,
		started:      started,
		wallNs:       wallNs,
		timers:       make(map[uint64]wheel.Timer),
		flights:      make(map[uint64]*flight),
		runs:         make(map[string]*groupRun),
		slots:        max(1, s.cfg.MaxDelivering/s.cfg.Partitions),
		pending:      make(map[uint64]*pendingTask),
		tasks:        store.NewTaskCache(taskCacheSize),
		waiters:      make(map[uint64]func()),
		pendingDLs:   make(map[uint64]*pendingDL),
		recs:         make(map[string]*groupRec),
		idem:         make(map[string]*idemWait),
		idemKeys:     make(map[uint16]int),
		replacing:    make(map[string]uint64),
		leading:      make(map[uint16]uint64),
		unleased:     make(map[uint16][]*flight),
		lastID:       make(map[uint16]uint64),
		issued:       make(map[uint16]uint64),
		appliedIndex: make(map[uint16]uint64),
		open:         make(map[uint16][]*pendingCmd),
		anywhere:     -1,
		proposed:     make(map[uint16][]*pendingCmd),
		done:         make(chan struct{}),
	}
	p.followers = newFollowWorker(s)
	for sh := index; sh < s.cfg.Store.Shards(); sh += s.cfg.Partitions {
		p.shards = append(p.shards, uint16(sh))
	}
	p.inbox.init(s.cfg.MaxInbox)
	return p, nil
}

// mono is the monotonic clock, for the loader's and sweeps' intervals.
func (p *partition) mono() time.Time { return p.s.cfg.Clock.Now() }

// wall is the partition's clock, in which due times are read: the system
// clock, except that it never goes back. When the system clock steps
// forward it follows at once, so tasks due by then fire; when it steps
// back, it goes on from where it was at the pace of monotonic time, so
// nothing stalls, and stays that far ahead of the system clock until the
// system clock catches up or the server restarts.
func (p *partition) wall() time.Time {
	// One reading gives both: Sub uses its monotonic part, UnixNano its
	// wall part.
	now := p.s.cfg.Clock.Now()
	mono := now.Sub(p.started)
	sys := now.Add(p.s.cfg.wallSkew()).UnixNano()
	p.wallNs = max(p.wallNs+int64(mono-p.monoAt), sys)
	p.monoAt = mono
	return time.Unix(0, p.wallNs)
}

// wallMs is wall as Unix ms.
func (p *partition) wallMs() int64 { return p.wall().UnixMilli() }

// wheelTime is where a due time falls on the wheel, which runs on wall.
func wheelTime(atMs int64) time.Time { return time.UnixMilli(atMs) }

// run is the partition loop.
func (p *partition) run(stop, abort <-chan struct{}) {
	defer close(p.done)
	go p.followers.run()
	defer p.followers.close()
	timer := p.s.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	defer func() {
		if p.lingerTimer != nil {
			p.lingerTimer.Stop()
		}
	}()
	for {
		msgs := p.inbox.take()
		p.publish(len(msgs))
		if len(msgs) > 0 && !p.stopping && p.s.failed() == nil {
			p.advance() // what is due first: the messages may take a while
		}
		for i, m := range msgs {
			p.unread = len(msgs) - i - 1
			m()
		}
		p.unread = 0
		if p.stopping {
			p.waitFollowers(nil)
		} else {
			p.catchUpIfDue()
		}
		if p.s.failed() != nil {
			return
		}
		if !p.stopping {
			p.advance()
			p.pump()
			p.loadAhead()
			p.sweep()
		}
		p.flush()
		p.cur = nil
		if !p.stopping {
			p.readAhead()
		}
		if p.stopping && p.drained() {
			return
		}
		if !p.sleep(timer, stop, abort) {
			return
		}
	}
}

// sleep waits for a message, the next timer, load or sweep, or stop. It
// reports false when the loop must exit at once.
func (p *partition) sleep(timer clockwork.Timer, stop, abort <-chan struct{}) bool {
	now := p.mono()
	wait := min(p.nextLoad.Sub(now), p.nextSweep.Sub(now), p.followWait())
	if next, ok := p.wheel.NextExpiry(); ok {
		wait = min(wait, next.Sub(p.wall()))
	}
	if p.stopping {
		wait = time.Hour
		stop = nil // seen; now wait only for the attempts under way
	}
	timer.Reset(max(wait, 0))
	select {
	case <-p.inbox.signal:
	case <-timer.Chan():
	case <-p.lingerC():
	case <-stop:
		p.stopping = true
	case <-abort:
		return false
	}
	return true
}

// lingerC is a channel that receives when commands held back must be
// proposed, or nil when none are held.
func (p *partition) lingerC() <-chan time.Time {
	if p.lingerUntil.IsZero() {
		return nil
	}
	d := time.Until(p.lingerUntil)
	if p.lingerTimer == nil {
		p.lingerTimer = time.NewTimer(d)
	} else {
		p.lingerTimer.Reset(d)
	}
	return p.lingerTimer.C
}

// drained reports that a stopping partition has nothing left that it
// must finish: no attempt under way and no decision waiting to be
// applied.
func (p *partition) drained() bool {
	if p.undecided() {
		return false
	}
	for _, f := range p.flights {
		if f.state == flightDelivering && !f.held || f.state == flightSettling {
			return false
		}
	}
	return true
}

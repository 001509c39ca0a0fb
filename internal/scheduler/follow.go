package scheduler

import (
	"fmt"
	"sync"
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
)

// A follower's entries wait, and are applied off the partition's loop.
// The entries of a shard this node leads are applied on the loop as soon
// as they are committed: callers wait for them, and the loop's runtime
// (timers, groups) follows them. Those of a shard it follows are needed
// only once it leads the shard, so the partition gathers them until they
// are followLinger old or followMaxEntries many and hands them to its
// follower worker, a goroutine of its own that applies them in one state
// batch. The leader's work on the loop is then never held up by a
// follower's apply, and the followers' applies use a core the loop leaves
// idle.
//
// Before anything that needs a followed shard's state (leading it, a
// snapshot replacing it, dropping it, stopping) the partition hands over
// what it gathered and waits until the worker has applied everything
// (waitFollowers). The worker keeps each shard's highest id as its
// applies leave it, read from the shard's state the first time; the
// partition makes it forget a shard whose state it changed or may change
// itself, and reads the shard's marks from the state when it leads it.
const (
	followLinger     = 10 * time.Millisecond
	followMaxEntries = 64
)

// apply applies committed entries: a led shard's at once, a followed
// shard's once gathered (see above).
func (p *partition) apply(committed []replica.Committed) {
	var now []replica.Committed
	for _, c := range committed {
		if p.leads(c.Shard) {
			now = append(now, c)
			continue
		}
		if len(p.behind) == 0 {
			p.behindSince = p.mono()
		}
		p.behind = append(p.behind, c)
		p.behindEntries += len(c.Entries)
	}
	if len(now) > 0 {
		p.applyNow(now)
	}
	if p.behindEntries >= followMaxEntries {
		p.catchUp()
	}
}

// catchUp hands the followed shards' gathered entries to the worker.
func (p *partition) catchUp() {
	if len(p.behind) == 0 {
		return
	}
	p.followers.hand(p.behind)
	p.behind, p.behindEntries = nil, 0
}

// catchUpIfDue hands over the gathered entries once the oldest is
// followLinger old.
func (p *partition) catchUpIfDue() {
	if len(p.behind) > 0 && p.followWait() <= 0 {
		p.catchUp()
	}
}

// followWait returns how long until the gathered entries are due to be
// handed over (an hour when none wait).
func (p *partition) followWait() time.Duration {
	if len(p.behind) == 0 {
		return time.Hour
	}
	return p.behindSince.Add(followLinger).Sub(p.mono())
}

// waitFollowers hands over what is gathered and returns once the worker
// has applied everything, forgetting shard's marks (if not nil).
func (p *partition) waitFollowers(shard *uint16) {
	p.catchUp()
	p.followers.wait()
	if shard != nil {
		p.followers.forget(*shard)
	}
}

// followWorker applies followed shards' committed entries on a goroutine
// of its own (see above).
type followWorker struct {
	s *Scheduler

	mu      sync.Mutex
	changed *sync.Cond
	queue   []replica.Committed
	busy    bool            // applying what it took from queue
	forgot  map[uint16]bool // shards whose marks to read again
	closed  bool
	done    chan struct{}
	lastID  map[uint16]uint64 // the worker's alone
	b       *store.Batch      // the worker's alone
	ignored func(uint16, store.EntryCommand)
}

func newFollowWorker(s *Scheduler) *followWorker {
	w := &followWorker{s: s, forgot: map[uint16]bool{}, lastID: map[uint16]uint64{}, done: make(chan struct{}),
		ignored: func(uint16, store.EntryCommand) {}}
	w.changed = sync.NewCond(&w.mu)
	return w
}

// hand queues entries to apply, in order.
func (w *followWorker) hand(cs []replica.Committed) {
	w.mu.Lock()
	w.queue = append(w.queue, cs...)
	w.mu.Unlock()
	w.changed.Broadcast()
}

// wait returns once everything handed over is applied (or the worker is
// closed).
func (w *followWorker) wait() {
	w.mu.Lock()
	for (len(w.queue) > 0 || w.busy) && !w.closed {
		w.changed.Wait()
	}
	w.mu.Unlock()
}

// forget makes the worker read shard's marks from its state again.
func (w *followWorker) forget(shard uint16) {
	w.mu.Lock()
	w.forgot[shard] = true
	w.mu.Unlock()
}

// close stops the worker, without applying what is still queued: the log
// holds it, and the node never heard it was applied.
func (w *followWorker) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.changed.Broadcast()
	<-w.done
}

func (w *followWorker) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.changed.Wait()
		}
		if w.closed {
			w.mu.Unlock()
			return
		}
		cs := w.queue
		w.queue, w.busy = nil, true
		for shard := range w.forgot {
			delete(w.lastID, shard)
		}
		clear(w.forgot)
		w.mu.Unlock()

		err := w.apply(cs)
		w.mu.Lock()
		w.busy = false
		w.mu.Unlock()
		w.changed.Broadcast()
		if err != nil {
			w.s.fail(fmt.Errorf("scheduler: apply a follower's entries: %w", err))
		}
	}
}

// apply applies cs in one state batch.
func (w *followWorker) apply(cs []replica.Committed) error {
	for _, c := range cs {
		if _, ok := w.lastID[c.Shard]; ok {
			continue
		}
		m, err := w.s.cfg.Store.ShardMeta(c.Shard)
		if err != nil {
			return err
		}
		w.lastID[c.Shard] = 0
		if m.LastId > 0 {
			w.lastID[c.Shard] = store.MakeID(c.Shard, m.LastId)
		}
	}
	if w.b == nil {
		w.b = w.s.cfg.Store.NewStateBatch()
	} else {
		w.b.Reset()
	}
	if err := applyCommitted(w.b, cs, nil, w.lastID, w.ignored); err != nil {
		return err
	}
	if err := w.s.cfg.Store.CommitNoSync(w.b); err != nil {
		return err
	}
	for _, c := range cs {
		w.s.node.Applied(c.Shard, c.Entries[len(c.Entries)-1].GetIndex())
	}
	return nil
}

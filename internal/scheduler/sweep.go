package scheduler

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// DeadLetterLimits is one client's dead letter policy: at most MaxEntries
// entries (0: DefaultMaxDeadLetters), each kept for Retention (0: until
// deleted). A group's blocked head is never removed by them and does not
// count against MaxEntries.
type DeadLetterLimits struct {
	MaxEntries int
	Retention  time.Duration
}

// deadLetterCounts counts dead letters per client as changes are applied,
// so the sweeper knows at once who is over their maximum without reading
// the queue.
type deadLetterCounts struct {
	mu       sync.Mutex
	byClient map[string]int // dead letters not blocking a group
	total    atomic.Int64
	over     chan struct{} // a client went over its maximum
	limits   func(string) DeadLetterLimits
}

func newDeadLetterCounts(limits func(string) DeadLetterLimits) *deadLetterCounts {
	return &deadLetterCounts{byClient: make(map[string]int), over: make(chan struct{}, 1), limits: limits}
}

// changed records that a dead letter went from old to now (nil: absent).
func (c *deadLetterCounts) changed(old, now *storepb.DeadLetter) {
	delta := func(dl *storepb.DeadLetter, sign int) {
		if dl == nil {
			return
		}
		c.total.Add(int64(sign))
		if !dl.BlocksGroup {
			c.add(dl.Task.Client, sign)
		}
	}
	delta(old, -1)
	delta(now, +1)
}

func (c *deadLetterCounts) add(client string, n int) {
	c.mu.Lock()
	c.byClient[client] += n
	count := c.byClient[client]
	if count <= 0 {
		delete(c.byClient, client)
	}
	c.mu.Unlock()
	if n > 0 && count > maxEntries(c.limits(client)) {
		select {
		case c.over <- struct{}{}:
		default:
		}
	}
}

// clients returns each client with dead letters and how many.
func (c *deadLetterCounts) clients() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.byClient))
	for k, v := range c.byClient {
		out[k] = v
	}
	return out
}

func maxEntries(l DeadLetterLimits) int {
	if l.MaxEntries > 0 {
		return l.MaxEntries
	}
	return DefaultMaxDeadLetters
}

// countDeadLetters fills the counts from the dead letter index at start.
func (s *Scheduler) countDeadLetters() error {
	for shard := range uint16(s.cfg.Store.Shards()) {
		err := s.cfg.Store.DeadLetterRefs(shard, "", func(r store.DeadLetterRef) bool {
			s.deadLetters.total.Add(1)
			if !r.BlocksGroup {
				s.deadLetters.add(r.Client, 1)
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sweep enforces the dead letter limits until stop closes: a client over
// its maximum as soon as it gets there, retention every SweepInterval. It
// reads only the dead letter index and deletes through the partition
// loops like any caller, so it never races a replay or a new dead letter.
func (s *Scheduler) sweep(stop <-chan struct{}) {
	ticker := s.cfg.Clock.NewTicker(s.cfg.SweepInterval)
	defer ticker.Stop()
	for {
		retention := false
		select {
		case <-stop:
			return
		case <-s.deadLetters.over:
		case <-ticker.Chan():
			retention = true
		}
		if err := s.sweepOnce(context.Background(), retention); err != nil {
			s.cfg.Logger.Warn("dead letter sweep failed", "err", err)
		}
	}
}

// sweepOnce deletes the dead letters beyond each client's maximum, oldest
// first, and with retention also those past it.
func (s *Scheduler) sweepOnce(ctx context.Context, retention bool) error {
	now := s.cfg.Clock.Now().Add(s.cfg.wallSkew())
	for client, n := range s.deadLetters.clients() {
		limits := s.cfg.DeadLetterPolicy(client)
		excess := n - maxEntries(limits)
		cutoff := int64(0)
		if retention && limits.Retention > 0 {
			cutoff = now.Add(-limits.Retention).UnixMilli()
		}
		if excess <= 0 && cutoff == 0 {
			continue
		}
		refs, err := s.expiredDeadLetters(client, excess, cutoff)
		if err != nil {
			return err
		}
		if _, err := s.dropDeadLetters(ctx, refs); err != nil {
			return err
		}
	}
	return nil
}

// expiredDeadLetters picks a client's dead letters that failed before
// cutoffMs, then the oldest of the rest while more than excess remain,
// never a blocked head. Each shard's index is in failure order, so only
// the oldest entries of each are read.
func (s *Scheduler) expiredDeadLetters(client string, excess int, cutoffMs int64) ([]store.DeadLetterRef, error) {
	var expired, oldest []store.DeadLetterRef
	for shard := range uint16(s.cfg.Store.Shards()) {
		taken := 0
		err := s.cfg.Store.DeadLetterRefs(shard, client, func(r store.DeadLetterRef) bool {
			switch {
			case r.BlocksGroup:
			case r.FailedMs < cutoffMs:
				expired = append(expired, r)
			case taken < excess:
				oldest = append(oldest, r)
				taken++
			default:
				return false
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(oldest, func(a, b store.DeadLetterRef) int {
		return cmp.Or(cmp.Compare(a.FailedMs, b.FailedMs), cmp.Compare(a.ID, b.ID))
	})
	if more := excess - len(expired); more > 0 {
		expired = append(expired, oldest[:min(more, len(oldest))]...)
	}
	return expired, nil
}

// dropDeadLetters deletes dead letters that are not a group's blocked
// head, a batch per partition at a time, and returns how many it deleted.
func (s *Scheduler) dropDeadLetters(ctx context.Context, refs []store.DeadLetterRef) (int, error) {
	n := 0
	for p, ids := range s.byPartition(len(refs), func(i int) uint64 { return refs[i].ID }) {
		for chunk := range slices.Chunk(ids, 1024) {
			r, err := s.call(ctx, p, func(done func(result)) { p.dropDeadLetters(chunk, done) })
			n += r.count
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// dropDeadLetters deletes the dead letters still there, not blocking a
// group, and in shards this node leads.
func (p *partition) dropDeadLetters(ids []uint64, done func(result)) {
	var dls []*storepb.DeadLetter
	for _, id := range ids {
		if !p.leads(store.ShardOf(id)) {
			continue
		}
		dl, ok, err := p.currentDL(id)
		if err != nil {
			done(result{err: err})
			return
		}
		if ok && !dl.BlocksGroup {
			dls = append(dls, dl)
		}
	}
	each := gather(len(dls), func(err error) { done(result{count: len(dls), err: err}) })
	for _, dl := range dls {
		p.begin(store.ShardOf(dl.Id), storepb.Op_OP_SWEEP)
		_ = p.cmd().DeleteDeadLetter(dl) // it was stored, so it encodes
		p.decideDL(dl.Id, dl, nil)
		p.then(each)
	}
}

// sweep forgets idempotency keys past their retention, and the oldest
// beyond each shard's share of MaxIdempotencyKeys, a bounded number per
// loop turn.
func (p *partition) sweep() {
	now := p.mono()
	if now.Before(p.nextSweep) {
		return
	}
	const budget = 4096
	cutoff := p.wallMs() - p.s.cfg.IdempotencyRetention.Milliseconds()
	perShard := max(1, p.s.cfg.MaxIdempotencyKeys/p.s.cfg.Store.Shards())
	left := budget
	for sh := range p.leading {
		p.begin(sh, storepb.Op_OP_SWEEP)
		err := p.s.cfg.Store.ScanIdempotency(sh, func(k store.IdempotencyKey) bool {
			if left == 0 || (k.CreatedMs >= cutoff && p.idemKeys[sh] <= perShard) {
				return false
			}
			_ = p.cmd().DeleteIdempotency(sh, k.Client, k.Key, k.CreatedMs)
			p.idemKeys[sh]--
			left--
			return true
		})
		if err != nil {
			p.s.fail(err)
			return
		}
	}
	p.nextSweep = now.Add(p.s.cfg.SweepInterval)
	if left == 0 {
		p.nextSweep = now // more to do: go on next turn
	}
}

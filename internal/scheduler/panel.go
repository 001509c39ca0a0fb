package scheduler

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Read-only views for the web panel. Like the other reads they go to the
// store directly and decide nothing.

// errFull ends a scan that has what it needs.
var errFull = errors.New("scheduler: scan full")

// SearchQuery selects tasks for Search: ListQuery's filters and more.
type SearchQuery struct {
	ListQuery
	// Shard, if set, keeps only tasks of that shard.
	Shard *uint16
	// Match, if set, further filters tasks (a payload search).
	Match func(*storepb.Task) bool
	// ByDue lists in (wake time, id) order instead of id order: when each
	// task next runs (see store.WakeMs). The cursor is (AfterDue, After).
	ByDue    bool
	AfterDue int64
}

// SearchPage is one page of Search: the tasks and the next page's
// cursor, NextAfter 0 when there is none.
type SearchPage struct {
	Tasks     []TaskView
	NextAfter uint64
	NextDue   int64 // ByDue only
}

// Search is List with the panel's extra filters and orders.
func (s *Scheduler) Search(ctx context.Context, c Caller, q SearchQuery) (SearchPage, error) {
	if err := s.readable(ctx, c, q.Client); err != nil {
		return SearchPage{}, err
	}
	if q.Limit <= 0 {
		q.Limit = store.DefaultLimit
	}
	q.Limit = min(q.Limit, store.MaxLimit)
	match := searchMatch(q)
	nowMs := s.cfg.Clock.Now().Add(s.cfg.wallSkew()).UnixMilli()
	if !q.ByDue {
		tasks, next, err := s.cfg.Store.ListTasks(store.TaskQuery{
			Client: q.Client, Group: q.Group, After: q.After, Limit: q.Limit,
			Match: func(t *storepb.Task) bool { return ctx.Err() == nil && match(t) },
		})
		if err != nil {
			return SearchPage{}, err
		}
		return SearchPage{Tasks: views(tasks, nowMs), NextAfter: next}, ctx.Err()
	}
	return s.searchByDue(ctx, q, match, nowMs)
}

// searchMatch is List's filter plus the client, group, shard and Match.
func searchMatch(q SearchQuery) func(*storepb.Task) bool {
	from, to := q.DueFrom.UnixMilli(), q.DueTo.UnixMilli()
	return func(t *storepb.Task) bool {
		switch {
		case q.Client != "" && t.Client != q.Client,
			q.Group != "" && t.Group != q.Group,
			q.Shard != nil && store.ShardOf(t.Id) != *q.Shard,
			!q.DueFrom.IsZero() && t.DueMs < from,
			!q.DueTo.IsZero() && t.DueMs >= to,
			q.Recurring != nil && *q.Recurring != recurring(t),
			q.Retrying != nil && *q.Retrying != (t.NextAttemptMs > 0),
			q.Match != nil && !q.Match(t):
			return false
		}
		return true
	}
}

type dueTask struct {
	wake int64
	task *storepb.Task
}

// searchByDue takes the first Limit+1 matches past the cursor from each
// shard's due index, then keeps the first Limit of them all: every
// shard's share of the global page is among its own first Limit.
func (s *Scheduler) searchByDue(ctx context.Context, q SearchQuery, match func(*storepb.Task) bool, nowMs int64) (SearchPage, error) {
	first, last := uint16(0), uint16(s.cfg.Store.Shards()-1)
	if q.Shard != nil {
		first, last = *q.Shard, *q.Shard
	}
	fromMs, toMs := max(q.AfterDue, 0), int64(math.MaxInt64)
	if !q.DueFrom.IsZero() {
		fromMs = max(fromMs, q.DueFrom.UnixMilli())
	}
	var found []dueTask
	for shard := first; shard <= last; shard++ {
		n := 0
		err := s.cfg.Store.ScanDue(shard, fromMs, toMs, func(e store.DueEntry) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if e.Due == q.AfterDue && e.ID <= q.After {
				return nil
			}
			t, err := s.cfg.Store.Task(e.ID)
			if errors.Is(err, store.ErrNotFound) {
				return nil // finished since the scan's snapshot
			} else if err != nil {
				return err
			}
			if !match(t) {
				return nil
			}
			found = append(found, dueTask{wake: e.Due, task: t})
			if n++; n > q.Limit {
				return errFull
			}
			return nil
		})
		if err != nil && err != errFull {
			return SearchPage{}, err
		}
		if shard == last {
			break // shard is a uint16: last may be its maximum
		}
	}
	slices.SortFunc(found, func(a, b dueTask) int {
		return cmp.Or(cmp.Compare(a.wake, b.wake), cmp.Compare(a.task.Id, b.task.Id))
	})
	page := SearchPage{}
	if len(found) > q.Limit {
		found = found[:q.Limit]
		tail := found[len(found)-1]
		page.NextAfter, page.NextDue = tail.task.Id, tail.wake
	}
	for _, f := range found {
		page.Tasks = append(page.Tasks, TaskView{Task: f.task, Status: statusOf(f.task, nowMs)})
	}
	return page, nil
}

func views(tasks []*storepb.Task, nowMs int64) []TaskView {
	out := make([]TaskView, len(tasks))
	for i, t := range tasks {
		out[i] = TaskView{Task: t, Status: statusOf(t, nowMs)}
	}
	return out
}

// DueHistogram counts due index entries per shard and time bucket: the
// runs coming up, as the timing wheel will see them.
type DueHistogram struct {
	From    time.Time
	Bucket  time.Duration
	Buckets int
	// Counts has Buckets entries per shard, shard by shard.
	Counts []uint64
	// Overdue counts entries due before From: due work not yet started
	// (waiting for a slot, behind its group, or held by a blocked group).
	Overdue uint64
	// Truncated is set when the scan stopped at maxScan entries.
	Truncated bool
}

// DueCounts reads every shard's due index from the beginning to the end
// of the last bucket, reading at most maxScan entries. For admins: it
// counts every client's tasks.
func (s *Scheduler) DueCounts(ctx context.Context, c Caller, from time.Time, bucket time.Duration, buckets, maxScan int) (DueHistogram, error) {
	if !c.Admin {
		return DueHistogram{}, ErrNotFound
	}
	h := DueHistogram{From: from, Bucket: bucket, Buckets: buckets, Counts: make([]uint64, s.cfg.Store.Shards()*buckets)}
	fromMs, bucketMs := from.UnixMilli(), bucket.Milliseconds()
	toMs := fromMs + bucketMs*int64(buckets)
	scanned := 0
	for shard := range uint16(s.cfg.Store.Shards()) {
		err := s.cfg.Store.ScanDue(shard, 0, toMs, func(e store.DueEntry) error {
			if scanned++; scanned > maxScan {
				h.Truncated = true
				return errFull
			}
			if e.Due < fromMs {
				h.Overdue++
			} else {
				h.Counts[int(shard)*buckets+int((e.Due-fromMs)/bucketMs)]++
			}
			return ctx.Err()
		})
		if err == errFull {
			break
		}
		if err != nil {
			return DueHistogram{}, err
		}
	}
	return h, nil
}

// GroupQuery selects groups for Groups.
type GroupQuery struct {
	Client        string // "" = every client's (admin)
	BlockedOnly   bool
	GroupContains string
	Limit         int
}

// Groups lists groups: the blocked ones first, longest blocked first, then
// the others in shard and key order, at most q.Limit; truncated reports
// that more matched.
func (s *Scheduler) Groups(ctx context.Context, c Caller, q GroupQuery) (groups []*storepb.Group, truncated bool, err error) {
	if err := s.readable(ctx, c, q.Client); err != nil {
		return nil, false, err
	}
	keep := func(blocked bool) func(*storepb.Group) error {
		return func(g *storepb.Group) error {
			switch {
			case (g.BlockedTask != 0) != blocked,
				q.Client != "" && g.Client != q.Client,
				!strings.Contains(g.Group, q.GroupContains):
				return ctx.Err()
			case len(groups) == q.Limit:
				truncated = true
				return errFull
			}
			groups = append(groups, g)
			return ctx.Err()
		}
	}
	if err := s.eachShard(func(shard uint16) error { return s.cfg.Store.ScanBlockedGroups(shard, keep(true)) }); err != nil {
		return nil, false, err
	}
	slices.SortStableFunc(groups, func(a, b *storepb.Group) int { return cmp.Compare(a.BlockedSinceMs, b.BlockedSinceMs) })
	if !q.BlockedOnly && !truncated {
		if err := s.eachShard(func(shard uint16) error { return s.cfg.Store.ScanGroups(shard, keep(false)) }); err != nil {
			return nil, false, err
		}
	}
	return groups, truncated, nil
}

// eachShard runs scan on every shard until one fails or is full.
func (s *Scheduler) eachShard(scan func(shard uint16) error) error {
	for shard := range uint16(s.cfg.Store.Shards()) {
		if err := scan(shard); err == errFull {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// PartitionOf is the partition loop that runs a shard.
func (s *Scheduler) PartitionOf(shard uint16) int { return int(shard) & (len(s.parts) - 1) }

// Shards is the number of shards of the store.
func (s *Scheduler) Shards() int { return s.cfg.Store.Shards() }

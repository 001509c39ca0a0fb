package scheduler

import (
	"context"
	"errors"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Reads that need no decision go to the store directly: they see every
// acknowledged change.

// List returns tasks matching q in id order and the cursor of the next
// page (0 when there is none). Status is what the records say (SCHEDULED,
// QUEUED once due, RETRYING); ask Get for the live status of one task.
func (s *Scheduler) List(ctx context.Context, c Caller, q ListQuery) ([]TaskView, uint64, error) {
	if err := s.readable(ctx, c, q.Client); err != nil {
		return nil, 0, err
	}
	if q.Limit < 0 || q.Limit > 1000 {
		return nil, 0, invalid("limit", "must be between 0 and 1000, got %d", q.Limit)
	}
	from, to := q.DueFrom.UnixMilli(), q.DueTo.UnixMilli()
	match := func(t *storepb.Task) bool {
		switch {
		case !q.DueFrom.IsZero() && t.DueMs < from,
			!q.DueTo.IsZero() && t.DueMs >= to,
			q.Recurring != nil && *q.Recurring != recurring(t),
			q.Retrying != nil && *q.Retrying != (t.NextAttemptMs > 0):
			return false
		}
		return true
	}
	tasks, next, err := s.cfg.Store.ListTasks(store.TaskQuery{
		Client: q.Client, Group: q.Group, After: q.After, Limit: q.Limit, Match: match,
	})
	if err != nil {
		return nil, 0, err
	}
	views := make([]TaskView, len(tasks))
	nowMs := s.cfg.Clock.Now().Add(s.cfg.wallSkew()).UnixMilli()
	for i, t := range tasks {
		views[i] = TaskView{Task: t, Status: statusOf(t, nowMs)}
	}
	return views, next, nil
}

// DeadLetters lists dead letters in id order, a page at a time.
func (s *Scheduler) DeadLetters(ctx context.Context, c Caller, client string, after uint64, limit int) ([]*storepb.DeadLetter, uint64, error) {
	if err := s.readable(ctx, c, client); err != nil {
		return nil, 0, err
	}
	return s.cfg.Store.ListDeadLetters(client, after, limit)
}

// DeadLetter returns one dead letter.
func (s *Scheduler) DeadLetter(ctx context.Context, c Caller, id uint64) (*storepb.DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dl, err := s.cfg.Store.DeadLetter(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, ErrNotFound
	case err != nil:
		return nil, err
	case !c.owns(dl.Task.Client):
		return nil, ErrNotFound
	}
	return dl, nil
}

// Group returns a group's durable state: its next sequence number and,
// when blocked, the dead letter blocking it.
func (s *Scheduler) Group(ctx context.Context, c Caller, client, group string) (*storepb.Group, error) {
	if err := s.readable(ctx, c, client); err != nil {
		return nil, err
	}
	g, err := s.cfg.Store.Group(s.cfg.Store.GroupShard(client, group), client, group)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	return g, err
}

// readable checks that c may read client's data; admins may read all
// clients' (client "").
func (s *Scheduler) readable(ctx context.Context, c Caller, client string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if client == "" && !c.Admin {
		return invalid("client", "is required")
	}
	if client != "" && !c.owns(client) {
		return ErrNotFound
	}
	return nil
}

package scheduler

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// DeadLetterLimits is one client's dead letter policy: at most MaxEntries
// entries (0: unbounded), each kept for Retention (0: until deleted).
type DeadLetterLimits struct {
	MaxEntries int
	Retention  time.Duration
}

// sweep enforces every client's dead letter policy every
// Config.SweepInterval until stop closes. It reads the queue from the
// store and deletes through the partition loops like any caller, so it
// never races a replay or a new dead letter.
func (s *Scheduler) sweep(stop <-chan struct{}) {
	ticker := s.cfg.Clock.NewTicker(s.cfg.SweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.Chan():
			if err := s.sweepOnce(context.Background()); err != nil {
				s.cfg.Logger.Warn("dead letter sweep failed", "err", err)
			}
			s.sweeps.Add(1)
		}
	}
}

// sweepOnce deletes the dead letters that are past their client's
// retention or beyond its maximum count, oldest first. A group's blocked
// head is never deleted this way: that would unblock the group behind the
// operator's back.
func (s *Scheduler) sweepOnce(ctx context.Context) error {
	byClient := map[string][]*storepb.DeadLetter{}
	for after := uint64(0); ; {
		page, next, err := s.cfg.Store.ListDeadLetters("", after, store.MaxLimit)
		if err != nil {
			return err
		}
		for _, dl := range page {
			byClient[dl.Task.Client] = append(byClient[dl.Task.Client], dl)
		}
		if next == 0 {
			break
		}
		after = next
	}
	admin := Caller{Admin: true}
	now := s.cfg.Clock.Now()
	for client, dls := range byClient {
		limits := s.cfg.DeadLetterPolicy(client)
		for _, dl := range expired(dls, limits, now) {
			if err := s.DeleteDeadLetter(ctx, admin, dl.Id); err != nil && err != ErrNotFound {
				return err
			}
		}
	}
	return nil
}

// expired picks the dead letters a policy removes: those older than the
// retention, then the oldest beyond the maximum count. Blocked heads are
// kept and do not count against the maximum.
func expired(dls []*storepb.DeadLetter, limits DeadLetterLimits, now time.Time) []*storepb.DeadLetter {
	dls = slices.DeleteFunc(slices.Clone(dls), func(dl *storepb.DeadLetter) bool { return dl.BlocksGroup })
	slices.SortFunc(dls, func(a, b *storepb.DeadLetter) int {
		return cmp.Or(cmp.Compare(a.FailedMs, b.FailedMs), cmp.Compare(a.Id, b.Id))
	})
	cut := 0
	if limits.Retention > 0 {
		oldest := now.Add(-limits.Retention).UnixMilli()
		for cut < len(dls) && dls[cut].FailedMs < oldest {
			cut++
		}
	}
	if limits.MaxEntries > 0 && len(dls)-cut > limits.MaxEntries {
		cut = len(dls) - limits.MaxEntries
	}
	return dls[:cut]
}

package server

import (
	"errors"
	"math"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// errSummaryStopped ends a recovery count when the server stops.
var errSummaryStopped = errors.New("server: stopping")

// logRecovery counts what the store holds, from the due index alone, and
// logs it with how long the start took: after a restart, the operator's
// first question.
func (s *Server) logRecovery(toReady time.Duration) {
	now := s.started.UnixMilli()
	var tasks, overdue, blocked int64
	for shard := range s.st.Shards() {
		err := s.st.ScanBlockedGroups(uint16(shard), func(*storepb.Group) error {
			blocked++
			return nil
		})
		if err != nil {
			s.log.Warn("counting the blocked groups failed", "err", err)
			return
		}
		err = s.st.ScanDue(uint16(shard), math.MinInt64, math.MaxInt64, func(e store.DueEntry) error {
			tasks++
			if e.Due < now {
				overdue++
			}
			if tasks%4096 == 0 {
				select {
				case <-s.stopping:
					return errSummaryStopped
				default:
				}
			}
			return nil
		})
		if err != nil {
			if !errors.Is(err, errSummaryStopped) {
				s.log.Warn("counting the recovered tasks failed", "err", err)
			}
			return
		}
	}
	s.log.Info("recovered", "tasks", tasks, "overdue", overdue, "blocked_groups", blocked,
		"dead_letters", s.sched.Stats().DeadLetters, "ready_after", toReady.Round(time.Millisecond).String())
}

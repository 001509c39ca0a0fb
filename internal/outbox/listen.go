package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// listen holds a connection that LISTENs on NotifyChannel and wakes the
// poll when the source's table gets a PENDING row. Notifications only
// make the poll come early: one lost while the connection is down costs
// at most a PollInterval.
func (s *Source) listen(ctx context.Context) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("outbox: listening for notifications failed; polling meanwhile", "err", err, "in", delay)
		select {
		case <-ctx.Done():
		case <-s.opts.Clock.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

func (s *Source) listenOnce(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.cfg.DSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+ident(NotifyChannel)); err != nil {
		return err
	}
	signal(s.wake) // whatever was notified while not listening
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload == s.table {
			signal(s.wake)
		}
	}
}

// maintain keeps this node's heartbeat in the node table (on every node:
// a silent node's QUEUED rows are taken back after StaleAfter), settles
// its own QUEUED rows older than StaleAfter, and measures the lag.
func (s *Source) maintain(ctx context.Context) {
	clock := s.opts.Clock
	beat := clock.NewTicker(max(s.cfg.LeaseTTL/3, 10*time.Millisecond))
	defer beat.Stop()
	own := clock.NewTicker(s.cfg.StaleAfter / 2)
	defer own.Stop()
	lag := clock.NewTicker(s.cfg.PollInterval)
	defer lag.Stop()
	s.heartbeat(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.Chan():
			s.heartbeat(ctx)
		case <-own.Chan():
			if err := s.reconcile(ctx, s.cfg.StaleAfter); err != nil && ctx.Err() == nil {
				s.log.Warn("outbox: checking QUEUED rows failed", "err", err)
			}
		case <-lag.Chan():
			var seconds float64
			if err := s.pool.QueryRow(ctx, s.q.lag).Scan(&seconds); err == nil {
				s.metrics.lag.Set(seconds)
			}
		}
	}
}

func (s *Source) heartbeat(ctx context.Context) {
	if _, err := s.leasePool.Exec(ctx, s.q.heartbeat, s.cfg.Name, s.opts.Node); err != nil && ctx.Err() == nil {
		s.log.Warn("outbox: heartbeat failed", "err", err)
	}
}

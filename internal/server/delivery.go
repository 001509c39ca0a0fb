package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// engine is what the server needs of the delivery engine.
type engine interface {
	scheduler.Deliverer
	scheduler.RetryDecider
	Invalidate(clientID string)
	Stats() delivery.Stats
	Close(ctx context.Context) error
}

var _ engine = (*delivery.Engine)(nil)

// deliverer returns Config.Deliverer and Config.Retry, or builds the
// delivery engine, which delivers and decides retries.
func (s *Server) deliverer(reg prometheus.Registerer) (scheduler.Deliverer, scheduler.RetryDecider, error) {
	if s.cfg.Deliverer != nil {
		return s.cfg.Deliverer, s.cfg.Retry, nil
	}
	e, err := delivery.New(delivery.Config{
		Clients:        s.st,
		Pools:          s.cfg.Pools,
		DefaultTimeout: s.cfg.DeliveryTimeout,
		Registerer:     reg,
		Logger:         s.log.With("component", "delivery"),
		Clock:          s.cfg.Clock,
	})
	if err != nil {
		return nil, nil, err
	}
	s.engine = e
	retry := s.cfg.Retry
	if retry == nil {
		retry = e
	}
	return e, retry, nil
}

// clientChanged makes the delivery engine read a client's configuration
// again.
func (s *Server) clientChanged(id string) {
	if e := s.engine; e != nil {
		e.Invalidate(id)
	}
}

package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
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
		Clients:        clientSource{s.auth},
		Pools:          s.cfg.Pools,
		DefaultTimeout: s.cfg.DeliveryTimeout,
		Registerer:     reg,
		Logger:         s.log.With("component", "delivery"),
		Clock:          s.cfg.Clock,
		Egress:         s.egress,
		SinkRootCAs:    s.cfg.SinkRootCAs,
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

// clientSource gives the delivery engine the clients as auth holds them:
// signing secrets open, callback rules parsed.
type clientSource struct{ a *auth.Auth }

var _ delivery.ClientDetails = clientSource{}

// Client reads a client for a delivery. Only a client that does not
// exist is store.ErrNotFound, which dead-letters the task; a node whose
// copy of the clients is catching up (a new leader of the shard that has
// just joined) answers an error the delivery retries later without
// counting an attempt.
func (c clientSource) Client(id string) (*storepb.Client, error) {
	ci, err := c.a.Client(id)
	if errors.Is(err, auth.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	return ci.Client, nil
}

func (c clientSource) ClientDetails(id string) (delivery.Details, error) {
	secrets, err := c.a.SigningSecrets(id)
	if err != nil {
		return delivery.Details{}, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	d := delivery.Details{Rules: c.a.CallbackRules(id)}
	for _, s := range secrets {
		d.Secrets = append(d.Secrets, delivery.Secret{Key: s.Key, Until: s.Until})
	}
	return d, nil
}

// callbackPolicy builds the server's callback policy from Config,
// expanding "default" and "none" in the deny list.
func callbackPolicy(cfg *Config) (*egress.Policy, error) {
	deny := cfg.CallbackDeny
	if deny == nil {
		deny = egress.DefaultDeny
	}
	var expanded []string
	for _, d := range deny {
		switch d {
		case "default":
			expanded = append(expanded, egress.DefaultDeny...)
		case "none":
		default:
			expanded = append(expanded, d)
		}
	}
	p, err := egress.New(cfg.CallbackAllow, slices.Compact(expanded))
	if err != nil {
		return nil, fmt.Errorf("server: callback policy: %w", err)
	}
	return p, nil
}

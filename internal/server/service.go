package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// Service is every operation of the Boomerang API, independent of the
// transport: each method takes the caller's Principal (Login and
// RefreshSession take none) and the wire request, checks every field
// (naming the field when one is wrong), enforces admin-only operations and
// ownership, and returns the wire response or an error that ErrorOf maps
// to a status. Its methods are safe for concurrent use.
type Service struct {
	auth       *auth.Auth
	sched      *scheduler.Scheduler
	clock      clockwork.Clock
	log        *slog.Logger
	maxPayload int
	// listBudget bounds the encoded size of a list page, so a response
	// never exceeds the frame limit.
	listBudget int
	info       func() *boomerangv1.GetServerInfoResponse
	// clientChanged tells the delivery engine to forget a client's cached
	// configuration.
	clientChanged func(id string)
}

// responseOverhead is the room a list response leaves for its envelope.
const responseOverhead = 1 << 10

// Authenticate returns who a session speaks for.
func (s *Service) Authenticate(sessionID string) (auth.Principal, error) {
	return s.auth.Authenticate(sessionID)
}

// Login checks a client's password and opens a session.
func (s *Service) Login(_ context.Context, req *boomerangv1.LoginRequest) (*boomerangv1.LoginResponse, error) {
	sess, err := s.auth.Login(req.ClientId, req.Password)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.LoginResponse{SessionId: sess.ID, ExpiresAtMs: sess.Expires.UnixMilli(), Admin: sess.Admin}, nil
}

// RefreshSession replaces the live session sessionID with a new one.
func (s *Service) RefreshSession(_ context.Context, sessionID string, _ *boomerangv1.RefreshSessionRequest) (*boomerangv1.RefreshSessionResponse, error) {
	sess, err := s.auth.Refresh(sessionID)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.RefreshSessionResponse{SessionId: sess.ID, ExpiresAtMs: sess.Expires.UnixMilli()}, nil
}

// RegisterClient registers a client (admin only). The signing secret is
// returned this once.
func (s *Service) RegisterClient(_ context.Context, p auth.Principal, req *boomerangv1.RegisterClientRequest) (*boomerangv1.RegisterClientResponse, error) {
	if !p.Admin {
		return nil, ErrAdminOnly
	}
	cb := callbackFromWire(req.Callback)
	err := firstError(
		checkMode("default_mode", req.DefaultMode),
		checkCallbackOverride(req.Callback),
		checkRetry("retry.", req.Retry),
		checkDeadLetterPolicy(req.DeadLetters),
		delivery.ValidateCallback(cb, 0),
	)
	if err != nil {
		return nil, err
	}
	spec := auth.ClientSpec{
		ID: req.ClientId, Password: req.Password, Admin: req.Admin,
		Callback: cb, Retry: retryFromWire(req.Retry), DefaultMode: toStoreMode(req.DefaultMode),
		DeadLetterMaxEntries: req.DeadLetters.GetMaxEntries(),
		DeadLetterRetention:  time.Duration(req.DeadLetters.GetRetentionMs()) * time.Millisecond,
		SigningSecret:        req.SigningSecret,
		GroupLimit:           req.GroupLimit,
	}
	c, secret, err := s.auth.RegisterClient(spec)
	if err != nil {
		return nil, about(err, "client %q", req.ClientId)
	}
	s.clientChanged(c.Id)
	return &boomerangv1.RegisterClientResponse{Client: clientToWire(c), SigningSecret: secret}, nil
}

// DeregisterClient removes a client (admin only) and ends its sessions.
// A client with tasks is refused with CONFLICT.
func (s *Service) DeregisterClient(_ context.Context, p auth.Principal, req *boomerangv1.DeregisterClientRequest) (*boomerangv1.DeregisterClientResponse, error) {
	if !p.Admin {
		return nil, ErrAdminOnly
	}
	if err := checkRequired("client_id", req.ClientId); err != nil {
		return nil, err
	}
	if err := s.auth.DeregisterClient(req.ClientId); err != nil {
		if errors.Is(err, auth.ErrHasTasks) {
			return nil, err // its message names the client
		}
		return nil, about(err, "client %q", req.ClientId)
	}
	s.clientChanged(req.ClientId)
	return &boomerangv1.DeregisterClientResponse{}, nil
}

// ListClients lists every client (admin only), without secrets.
func (s *Service) ListClients(_ context.Context, p auth.Principal, _ *boomerangv1.ListClientsRequest) (*boomerangv1.ListClientsResponse, error) {
	if !p.Admin {
		return nil, ErrAdminOnly
	}
	list, err := s.auth.ListClients()
	if err != nil {
		return nil, err
	}
	resp := &boomerangv1.ListClientsResponse{Clients: make([]*boomerangv1.ClientConfig, len(list))}
	for i, c := range list {
		resp.Clients[i] = clientToWire(c)
	}
	return resp, nil
}

// GetServerInfo describes the server to any client with a session.
func (s *Service) GetServerInfo(context.Context, auth.Principal, *boomerangv1.GetServerInfoRequest) (*boomerangv1.GetServerInfoResponse, error) {
	return s.info(), nil
}

// caller is the scheduler's view of a principal.
func caller(p auth.Principal) scheduler.Caller {
	return scheduler.Caller{Client: p.Client, Admin: p.Admin}
}

// owner resolves the client a list or group request names: "" is the
// caller itself, or with all set, every client for an admin. Only admins
// may name another client.
func owner(p auth.Principal, named string, all bool) (string, error) {
	switch {
	case named == "" && all && p.Admin:
		return "", nil
	case named == "":
		return p.Client, nil
	case named == p.Client || p.Admin:
		return named, checkName("client", named, auth.MaxClientIDLen)
	}
	return "", ErrOtherClient
}

// fit returns how many of items fit in budget bytes of a response's
// repeated field, at least one.
func fit[M proto.Message](items []M, budget int) int {
	size := 0
	for i, m := range items {
		size += 2 + protowire.SizeBytes(proto.Size(m)) // tag, length and body
		if size > budget && i > 0 {
			return i
		}
	}
	return len(items)
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

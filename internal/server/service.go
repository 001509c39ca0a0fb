package server

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// Service is every operation of the Boomerang API, independent of the
// transport: each method takes the caller's Principal (Login and
// RefreshSession take none) and the wire request, checks every field
// (naming the field when one is wrong), enforces roles and ownership,
// and returns the wire response or an error that ErrorOf maps to a
// status. Its methods are safe for concurrent use.
type Service struct {
	auth       *auth.Auth
	sched      *scheduler.Scheduler
	clock      clockwork.Clock
	log        *slog.Logger
	egress     *egress.Policy // the server's callback policy
	maxPayload int
	// listBudget bounds the encoded size of a list page, so a response
	// never exceeds the frame limit.
	listBudget int
	info       func() *boomerangv1.GetServerInfoResponse
	// clientChanged tells the delivery engine to forget a client's cached
	// configuration.
	clientChanged func(id string)
	panel         *panel
	// fwd sends requests on to shards' leaders; nil when standalone.
	fwd atomic.Pointer[forwarder]
	// groupShard is the shard of a client's group (store.GroupShard).
	groupShard func(client, group string) uint16
}

// responseOverhead is the room a list response leaves for its envelope.
const responseOverhead = 1 << 10

// Authenticate returns who a session speaks for.
func (s *Service) Authenticate(sessionID string) (auth.Principal, error) {
	return s.auth.Authenticate(sessionID)
}

// Login checks a client's password and opens a session. The source
// address comes with ctx (see withPeer).
func (s *Service) Login(ctx context.Context, req *boomerangv1.LoginRequest) (*boomerangv1.LoginResponse, error) {
	sess, err := s.auth.Login(req.ClientId, req.Password, peerOf(ctx))
	if err != nil {
		return nil, err
	}
	return &boomerangv1.LoginResponse{
		SessionId: sess.ID, ExpiresAtMs: sess.Expires.UnixMilli(), Admin: sess.Role == auth.RoleAdmin, Role: roleToWire(sess.Role),
	}, nil
}

// RefreshSession replaces the live session sessionID with a new one.
func (s *Service) RefreshSession(_ context.Context, sessionID string, _ *boomerangv1.RefreshSessionRequest) (*boomerangv1.RefreshSessionResponse, error) {
	sess, err := s.auth.Refresh(sessionID)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.RefreshSessionResponse{SessionId: sess.ID, ExpiresAtMs: sess.Expires.UnixMilli()}, nil
}

// Logout ends the session sessionID.
func (s *Service) Logout(_ context.Context, sessionID string, _ *boomerangv1.LogoutRequest) (*boomerangv1.LogoutResponse, error) {
	if err := s.auth.Logout(sessionID); err != nil {
		return nil, err
	}
	return &boomerangv1.LogoutResponse{}, nil
}

// ListSessions lists live sessions: every client's or a named one's for
// admins and read-only clients, a client's own otherwise.
func (s *Service) ListSessions(_ context.Context, p auth.Principal, req *boomerangv1.ListSessionsRequest) (*boomerangv1.ListSessionsResponse, error) {
	client, err := owner(p, req.Client, true)
	if err != nil {
		return nil, err
	}
	list := s.auth.ListSessions(client)
	resp := &boomerangv1.ListSessionsResponse{Sessions: make([]*boomerangv1.SessionInfo, len(list))}
	for i, si := range list {
		resp.Sessions[i] = &boomerangv1.SessionInfo{
			Handle: si.Handle, Client: si.Client, Role: roleToWire(si.Role), CreatedMs: si.Created.UnixMilli(),
			ExpiresMs: si.Expires.UnixMilli(), Source: si.Source, Current: si.Handle == p.Session,
		}
	}
	return resp, nil
}

// RevokeSessions ends one session of a client by its handle, or all of
// them: an admin's of any client, a client's of its own.
func (s *Service) RevokeSessions(_ context.Context, p auth.Principal, req *boomerangv1.RevokeSessionsRequest) (*boomerangv1.RevokeSessionsResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	client, err := owner(p, req.Client, false)
	if err != nil {
		return nil, err
	}
	if err := checkName("handle", req.Handle, 64); err != nil {
		return nil, err
	}
	n, err := s.auth.RevokeSessions(client, req.Handle)
	if err != nil {
		return nil, err
	}
	return &boomerangv1.RevokeSessionsResponse{Revoked: uint32(n)}, nil
}

// GetServerInfo describes the server to any client with a session.
func (s *Service) GetServerInfo(context.Context, auth.Principal, *boomerangv1.GetServerInfoRequest) (*boomerangv1.GetServerInfoResponse, error) {
	return s.info(), nil
}

// caller is the scheduler's view of a principal: admins and read-only
// clients see every client's data. Read-only callers never reach a
// scheduler operation that changes anything (see writable).
func caller(p auth.Principal) scheduler.Caller {
	return scheduler.Caller{Client: p.Client, Admin: p.SeesAll()}
}

// writable refuses read-only callers.
func writable(p auth.Principal) error {
	if p.ReadOnly() {
		return ErrReadOnly
	}
	return nil
}

// adminOnly refuses callers that are not admins.
func adminOnly(p auth.Principal) error {
	if !p.Admin() {
		return ErrAdminOnly
	}
	return nil
}

// owner resolves the client a request names: "" is the caller itself,
// or with all set, every client for an admin or a read-only client. Only
// they may name another client.
func owner(p auth.Principal, named string, all bool) (string, error) {
	switch {
	case named == "" && all && p.SeesAll():
		return "", nil
	case named == "":
		return p.Client, nil
	case named == p.Client || p.SeesAll():
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

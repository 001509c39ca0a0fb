package server

import (
	"context"
	"errors"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/delivery"
)

// RegisterClient registers a client (admin only). The signing secret is
// returned this once.
func (s *Service) RegisterClient(_ context.Context, p auth.Principal, req *boomerangv1.RegisterClientRequest) (*boomerangv1.RegisterClientResponse, error) {
	if err := adminOnly(p); err != nil {
		return nil, err
	}
	role, err := roleFromWire(req.Role, req.Admin)
	if err != nil {
		return nil, err
	}
	cb := callbackFromWire(req.Callback)
	err = firstError(
		checkMode("default_mode", req.DefaultMode),
		checkCallbackOverride(req.Callback),
		checkRetry("retry.", req.Retry),
		checkDeadLetterPolicy(req.DeadLetters),
		delivery.ValidateCallback(cb, 0),
		checkGroupRates(req.GroupRateLimit, req.GroupRateLimits),
	)
	if err != nil {
		return nil, err
	}
	rules, err := auth.ParseRules(req.CallbackRules.GetAllow(), req.CallbackRules.GetDeny())
	if err != nil {
		return nil, err
	}
	if err := checkCallbackPolicy(s.egress.Narrow(rules), cb); err != nil {
		return nil, err
	}
	spec := auth.ClientSpec{
		ID: req.ClientId, Password: req.Password, Role: role,
		Callback: cb, Retry: retryFromWire(req.Retry), DefaultMode: toStoreMode(req.DefaultMode),
		DeadLetterMaxEntries: req.DeadLetters.GetMaxEntries(),
		DeadLetterRetention:  time.Duration(req.DeadLetters.GetRetentionMs()) * time.Millisecond,
		SigningSecret:        req.SigningSecret,
		GroupLimit:           req.GroupLimit,
		CallbackAllow:        req.CallbackRules.GetAllow(), CallbackDeny: req.CallbackRules.GetDeny(),
		GroupRate: rateFromWire(req.GroupRateLimit), GroupRates: ratesFromWire(req.GroupRateLimits),
	}
	c, secret, err := s.auth.RegisterClient(spec)
	if err != nil {
		return nil, about(err, "client %q", req.ClientId)
	}
	s.clientChanged(c.Id)
	return &boomerangv1.RegisterClientResponse{Client: clientToWire(c), SigningSecret: secret}, nil
}

// DeregisterClient removes a client (admin only) and ends its sessions.
// A client with tasks is refused with CONFLICT: in a cluster, tasks on
// any shard, as its leader has them.
func (s *Service) DeregisterClient(ctx context.Context, p auth.Principal, req *boomerangv1.DeregisterClientRequest) (*boomerangv1.DeregisterClientResponse, error) {
	if err := adminOnly(p); err != nil {
		return nil, err
	}
	if err := checkRequired("client_id", req.ClientId); err != nil {
		return nil, err
	}
	if err := s.checkNoTasks(ctx, p, req.ClientId); err != nil {
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

// checkNoTasks refuses, in a cluster, to deregister a client with tasks
// on any shard; auth checks the shards this node hosts again.
func (s *Service) checkNoTasks(ctx context.Context, p auth.Principal, client string) error {
	f := forwarderOf(ctx)
	if f == nil {
		return nil
	}
	req := &boomerangv1.ListTasksRequest{Client: client, PageSize: MaxPageSize}
	resp, err := s.listTasksEverywhere(ctx, f, p, req, MaxPageSize)
	switch {
	case err != nil:
		return err
	case len(resp.Tasks) > 0 || resp.NextPageToken != 0:
		return &auth.HasTasksError{Client: client, Count: len(resp.Tasks), More: resp.NextPageToken != 0}
	}
	return nil
}

// ListClients lists every client (admins and read-only clients), without
// secrets.
func (s *Service) ListClients(_ context.Context, p auth.Principal, _ *boomerangv1.ListClientsRequest) (*boomerangv1.ListClientsResponse, error) {
	if !p.SeesAll() {
		return nil, ErrAdminOnly
	}
	list := s.auth.ListClients()
	resp := &boomerangv1.ListClientsResponse{Clients: make([]*boomerangv1.ClientConfig, len(list))}
	for i, c := range list {
		resp.Clients[i] = clientToWire(c)
	}
	return resp, nil
}

// GetClient shows a client: any for admins and read-only clients, itself
// for others.
func (s *Service) GetClient(_ context.Context, p auth.Principal, req *boomerangv1.GetClientRequest) (*boomerangv1.GetClientResponse, error) {
	id, err := owner(p, req.ClientId, false)
	if err != nil {
		return nil, err
	}
	c, err := s.auth.Client(id)
	if err != nil {
		return nil, about(err, "client %q", id)
	}
	return &boomerangv1.GetClientResponse{Client: clientToWire(c)}, nil
}

// UpdateClient changes a client's settings (admin only).
func (s *Service) UpdateClient(_ context.Context, p auth.Principal, req *boomerangv1.UpdateClientRequest) (*boomerangv1.UpdateClientResponse, error) {
	if err := adminOnly(p); err != nil {
		return nil, err
	}
	u, err := s.clientUpdate(req)
	if err != nil {
		return nil, err
	}
	c, err := s.auth.UpdateClient(req.ClientId, u)
	if err != nil {
		return nil, about(err, "client %q", req.ClientId)
	}
	s.clientChanged(req.ClientId)
	return &boomerangv1.UpdateClientResponse{Client: clientToWire(c)}, nil
}

// clientUpdate checks an update and turns it into auth's terms. The
// callback the client ends up with is checked against the rules it ends
// up with.
func (s *Service) clientUpdate(req *boomerangv1.UpdateClientRequest) (auth.ClientUpdate, error) {
	u := auth.ClientUpdate{}
	err := firstError(
		checkRequired("client_id", req.ClientId),
		checkCallbackOverride(req.Callback),
		checkRetry("retry.", req.Retry),
		checkDeadLetterPolicy(req.DeadLetters),
		checkGroupRates(req.GroupRateLimit, req.GroupRateLimits),
	)
	if err != nil {
		return u, err
	}
	u.SetGroupRate, u.GroupRate = req.GroupRateLimit != nil, rateFromWire(req.GroupRateLimit)
	u.GroupRates = ratesFromWire(req.GroupRateLimits)
	current, err := s.auth.Client(req.ClientId)
	if err != nil {
		return u, about(err, "client %q", req.ClientId)
	}
	cb, rules := current.Callback, s.auth.CallbackRules(req.ClientId)
	if req.Callback != nil || req.ClearCallback {
		u.SetCallback, u.Callback = true, callbackFromWire(req.Callback)
		cb = u.Callback
		if err := delivery.ValidateCallback(cb, 0); err != nil {
			return u, err
		}
	}
	if req.Retry != nil || req.ClearRetry {
		u.SetRetry, u.Retry = true, retryFromWire(req.Retry)
	}
	if req.DeadLetters != nil {
		u.SetDeadLetters, u.DeadLetterMaxEntries = true, req.DeadLetters.MaxEntries
		u.DeadLetterRetention = time.Duration(req.DeadLetters.RetentionMs) * time.Millisecond
	}
	if req.DefaultMode != nil {
		if err := checkMode("default_mode", *req.DefaultMode); err != nil {
			return u, err
		}
		m := toStoreMode(*req.DefaultMode)
		u.DefaultMode = &m
	}
	if req.Role != nil {
		if u.Role, err = roleFromWire(*req.Role, false); err != nil {
			return u, err
		}
	}
	u.GroupLimit = req.GroupLimit
	if req.CallbackRules != nil {
		u.SetRules, u.CallbackAllow, u.CallbackDeny = true, req.CallbackRules.Allow, req.CallbackRules.Deny
		if rules, err = auth.ParseRules(req.CallbackRules.Allow, req.CallbackRules.Deny); err != nil {
			return u, err
		}
	}
	return u, checkCallbackPolicy(s.egress.Narrow(rules), cb)
}

// ChangePassword sets a password: a client its own, with its current
// one; an admin anyone's, without. The client's other sessions end.
func (s *Service) ChangePassword(ctx context.Context, p auth.Principal, req *boomerangv1.ChangePasswordRequest) (*boomerangv1.ChangePasswordResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	id, err := owner(p, req.ClientId, false)
	if err != nil {
		return nil, err
	}
	current := req.CurrentPassword
	if p.Admin() {
		current = ""
	} else if current == "" {
		return nil, invalid("current_password", "is required to change your own password")
	}
	keep := ""
	if id == p.Client {
		keep = p.Session
	}
	if err := s.auth.ChangePassword(id, current, req.NewPassword, peerOf(ctx), keep); err != nil {
		return nil, about(err, "client %q", id)
	}
	return &boomerangv1.ChangePasswordResponse{}, nil
}

// RotateSigningSecret gives a client a new signing secret, returned this
// once; the old one keeps signing for the overlap. Admins rotate anyone's,
// clients their own.
func (s *Service) RotateSigningSecret(_ context.Context, p auth.Principal, req *boomerangv1.RotateSigningSecretRequest) (*boomerangv1.RotateSigningSecretResponse, error) {
	if err := writable(p); err != nil {
		return nil, err
	}
	id, err := owner(p, req.ClientId, false)
	if err != nil {
		return nil, err
	}
	overlap := auth.DefaultSecretOverlap
	if req.OverlapMs != nil {
		overlap = time.Duration(*req.OverlapMs) * time.Millisecond
	}
	c, secret, err := s.auth.RotateSigningSecret(id, req.SigningSecret, overlap)
	if err != nil {
		return nil, about(err, "client %q", id)
	}
	s.clientChanged(id)
	return &boomerangv1.RotateSigningSecretResponse{Client: clientToWire(c), SigningSecret: secret}, nil
}

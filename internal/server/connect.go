package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
	"github.com/boomerangd/boomerang/internal/auth"
)

// connectHandler serves the Service as boomerang.v1.BoomerangService over
// Connect, gRPC and gRPC-Web. The session travels in the
// "Authorization: Bearer <session id>" header.
type connectHandler struct {
	svc *Service
	m   *metrics
}

var _ boomerangv1connect.BoomerangServiceHandler = (*connectHandler)(nil)

// newConnectHandler returns the handler's path prefix and the handler,
// which takes request bodies of up to maxBody bytes (see limitBody) and
// attaches the wire Error to every error (see withErrorDetail).
func newConnectHandler(svc *Service, m *metrics, maxBody int) (string, http.Handler) {
	path, h := boomerangv1connect.NewBoomerangServiceHandler(&connectHandler{svc: svc, m: m},
		connect.WithReadMaxBytes(maxBody),
		connect.WithRecover(func(_ context.Context, spec connect.Spec, _ http.Header, r any) error {
			svc.log.Error("request panicked", "procedure", spec.Procedure, "panic", r)
			return ConnectError(fmt.Errorf("panic: %v", r))
		}),
	)
	return path, withErrorDetail(limitBody(h, maxBody))
}

// sessionOf returns the session id of a request's Authorization header.
func sessionOf(h http.Header) string {
	v := h.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "Bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// serve authenticates a request, runs op and maps its error.
func serve[Req, Resp any](ctx context.Context, h *connectHandler, name string, req *connect.Request[Req],
	op func(context.Context, auth.Principal, *Req) (*Resp, error)) (*connect.Response[Resp], error) {
	start := time.Now()
	p, forwarded := h.svc.fwd.Load().forwarded(ctx, req.Header().Get(forwardHeader))
	var err error
	if !forwarded {
		p, err = h.svc.Authenticate(sessionOf(req.Header()))
	}
	var resp *Resp
	if err == nil {
		ctx = withPeer(ctx, req.Peer().Addr)
		if !forwarded { // a forwarded request is never forwarded again
			ctx = withForwarder(ctx, h.svc.fwd.Load())
		}
		resp, err = op(ctx, p, req.Msg)
		resp, err = forwardOn(ctx, p, req.Msg, resp, err)
		h.svc.audited(p, name, any(req.Msg), err)
	}
	return answer(h, name, start, resp, err)
}

// answer counts a request and wraps its result for Connect.
func answer[Resp any](h *connectHandler, name string, start time.Time, resp *Resp, err error) (*connect.Response[Resp], error) {
	h.m.observe(name, StatusOf(err), time.Since(start))
	if err != nil {
		return nil, ConnectError(err)
	}
	return connect.NewResponse(resp), nil
}

func (h *connectHandler) Login(ctx context.Context, req *connect.Request[boomerangv1.LoginRequest]) (*connect.Response[boomerangv1.LoginResponse], error) {
	start := time.Now()
	resp, err := h.svc.Login(withPeer(ctx, req.Peer().Addr), req.Msg)
	return answer(h, "Login", start, resp, err)
}

func (h *connectHandler) RefreshSession(ctx context.Context, req *connect.Request[boomerangv1.RefreshSessionRequest]) (*connect.Response[boomerangv1.RefreshSessionResponse], error) {
	start := time.Now()
	resp, err := h.svc.RefreshSession(ctx, sessionOf(req.Header()), req.Msg)
	return answer(h, "RefreshSession", start, resp, err)
}

func (h *connectHandler) RegisterClient(ctx context.Context, req *connect.Request[boomerangv1.RegisterClientRequest]) (*connect.Response[boomerangv1.RegisterClientResponse], error) {
	return serve(ctx, h, "RegisterClient", req, h.svc.RegisterClient)
}

func (h *connectHandler) DeregisterClient(ctx context.Context, req *connect.Request[boomerangv1.DeregisterClientRequest]) (*connect.Response[boomerangv1.DeregisterClientResponse], error) {
	return serve(ctx, h, "DeregisterClient", req, h.svc.DeregisterClient)
}

func (h *connectHandler) ListClients(ctx context.Context, req *connect.Request[boomerangv1.ListClientsRequest]) (*connect.Response[boomerangv1.ListClientsResponse], error) {
	return serve(ctx, h, "ListClients", req, h.svc.ListClients)
}

func (h *connectHandler) RegisterTask(ctx context.Context, req *connect.Request[boomerangv1.RegisterTaskRequest]) (*connect.Response[boomerangv1.RegisterTaskResponse], error) {
	return serve(ctx, h, "RegisterTask", req, h.svc.RegisterTask)
}

func (h *connectHandler) RegisterTasks(ctx context.Context, req *connect.Request[boomerangv1.RegisterTasksRequest]) (*connect.Response[boomerangv1.RegisterTasksResponse], error) {
	resp, err := serve(ctx, h, "RegisterTasks", req, h.svc.RegisterTasks)
	if err == nil {
		h.m.observeBatch(resp.Msg)
	}
	return resp, err
}

func (h *connectHandler) UpdateTask(ctx context.Context, req *connect.Request[boomerangv1.UpdateTaskRequest]) (*connect.Response[boomerangv1.UpdateTaskResponse], error) {
	return serve(ctx, h, "UpdateTask", req, h.svc.UpdateTask)
}

func (h *connectHandler) CancelTask(ctx context.Context, req *connect.Request[boomerangv1.CancelTaskRequest]) (*connect.Response[boomerangv1.CancelTaskResponse], error) {
	return serve(ctx, h, "CancelTask", req, h.svc.CancelTask)
}

func (h *connectHandler) GetTask(ctx context.Context, req *connect.Request[boomerangv1.GetTaskRequest]) (*connect.Response[boomerangv1.GetTaskResponse], error) {
	return serve(ctx, h, "GetTask", req, h.svc.GetTask)
}

func (h *connectHandler) ListTasks(ctx context.Context, req *connect.Request[boomerangv1.ListTasksRequest]) (*connect.Response[boomerangv1.ListTasksResponse], error) {
	return serve(ctx, h, "ListTasks", req, h.svc.ListTasks)
}

func (h *connectHandler) ListDeadLetters(ctx context.Context, req *connect.Request[boomerangv1.ListDeadLettersRequest]) (*connect.Response[boomerangv1.ListDeadLettersResponse], error) {
	return serve(ctx, h, "ListDeadLetters", req, h.svc.ListDeadLetters)
}

func (h *connectHandler) GetDeadLetter(ctx context.Context, req *connect.Request[boomerangv1.GetDeadLetterRequest]) (*connect.Response[boomerangv1.GetDeadLetterResponse], error) {
	return serve(ctx, h, "GetDeadLetter", req, h.svc.GetDeadLetter)
}

func (h *connectHandler) ReplayDeadLetter(ctx context.Context, req *connect.Request[boomerangv1.ReplayDeadLetterRequest]) (*connect.Response[boomerangv1.ReplayDeadLetterResponse], error) {
	return serve(ctx, h, "ReplayDeadLetter", req, h.svc.ReplayDeadLetter)
}

func (h *connectHandler) DeleteDeadLetter(ctx context.Context, req *connect.Request[boomerangv1.DeleteDeadLetterRequest]) (*connect.Response[boomerangv1.DeleteDeadLetterResponse], error) {
	return serve(ctx, h, "DeleteDeadLetter", req, h.svc.DeleteDeadLetter)
}

func (h *connectHandler) GetGroup(ctx context.Context, req *connect.Request[boomerangv1.GetGroupRequest]) (*connect.Response[boomerangv1.GetGroupResponse], error) {
	return serve(ctx, h, "GetGroup", req, h.svc.GetGroup)
}

func (h *connectHandler) UnblockGroup(ctx context.Context, req *connect.Request[boomerangv1.UnblockGroupRequest]) (*connect.Response[boomerangv1.UnblockGroupResponse], error) {
	return serve(ctx, h, "UnblockGroup", req, h.svc.UnblockGroup)
}

func (h *connectHandler) SkipGroup(ctx context.Context, req *connect.Request[boomerangv1.SkipGroupRequest]) (*connect.Response[boomerangv1.SkipGroupResponse], error) {
	return serve(ctx, h, "SkipGroup", req, h.svc.SkipGroup)
}

func (h *connectHandler) CancelTasks(ctx context.Context, req *connect.Request[boomerangv1.CancelTasksRequest]) (*connect.Response[boomerangv1.CancelTasksResponse], error) {
	return serve(ctx, h, "CancelTasks", req, h.svc.CancelTasks)
}

func (h *connectHandler) PurgeDeadLetters(ctx context.Context, req *connect.Request[boomerangv1.PurgeDeadLettersRequest]) (*connect.Response[boomerangv1.PurgeDeadLettersResponse], error) {
	return serve(ctx, h, "PurgeDeadLetters", req, h.svc.PurgeDeadLetters)
}

func (h *connectHandler) GetServerInfo(ctx context.Context, req *connect.Request[boomerangv1.GetServerInfoRequest]) (*connect.Response[boomerangv1.GetServerInfoResponse], error) {
	return serve(ctx, h, "GetServerInfo", req, h.svc.GetServerInfo)
}

func (h *connectHandler) Logout(ctx context.Context, req *connect.Request[boomerangv1.LogoutRequest]) (*connect.Response[boomerangv1.LogoutResponse], error) {
	start := time.Now()
	resp, err := h.svc.Logout(ctx, sessionOf(req.Header()), req.Msg)
	return answer(h, "Logout", start, resp, err)
}

func (h *connectHandler) ListSessions(ctx context.Context, req *connect.Request[boomerangv1.ListSessionsRequest]) (*connect.Response[boomerangv1.ListSessionsResponse], error) {
	return serve(ctx, h, "ListSessions", req, h.svc.ListSessions)
}

func (h *connectHandler) RevokeSessions(ctx context.Context, req *connect.Request[boomerangv1.RevokeSessionsRequest]) (*connect.Response[boomerangv1.RevokeSessionsResponse], error) {
	return serve(ctx, h, "RevokeSessions", req, h.svc.RevokeSessions)
}

func (h *connectHandler) GetClient(ctx context.Context, req *connect.Request[boomerangv1.GetClientRequest]) (*connect.Response[boomerangv1.GetClientResponse], error) {
	return serve(ctx, h, "GetClient", req, h.svc.GetClient)
}

func (h *connectHandler) UpdateClient(ctx context.Context, req *connect.Request[boomerangv1.UpdateClientRequest]) (*connect.Response[boomerangv1.UpdateClientResponse], error) {
	return serve(ctx, h, "UpdateClient", req, h.svc.UpdateClient)
}

func (h *connectHandler) ChangePassword(ctx context.Context, req *connect.Request[boomerangv1.ChangePasswordRequest]) (*connect.Response[boomerangv1.ChangePasswordResponse], error) {
	return serve(ctx, h, "ChangePassword", req, h.svc.ChangePassword)
}

func (h *connectHandler) RotateSigningSecret(ctx context.Context, req *connect.Request[boomerangv1.RotateSigningSecretRequest]) (*connect.Response[boomerangv1.RotateSigningSecretResponse], error) {
	return serve(ctx, h, "RotateSigningSecret", req, h.svc.RotateSigningSecret)
}

func (h *connectHandler) ListGroups(ctx context.Context, req *connect.Request[boomerangv1.ListGroupsRequest]) (*connect.Response[boomerangv1.ListGroupsResponse], error) {
	return serve(ctx, h, "ListGroups", req, h.svc.ListGroups)
}

func (h *connectHandler) GetStats(ctx context.Context, req *connect.Request[boomerangv1.GetStatsRequest]) (*connect.Response[boomerangv1.GetStatsResponse], error) {
	return serve(ctx, h, "GetStats", req, h.svc.GetStats)
}

func (h *connectHandler) GetDueHistogram(ctx context.Context, req *connect.Request[boomerangv1.GetDueHistogramRequest]) (*connect.Response[boomerangv1.GetDueHistogramResponse], error) {
	return serve(ctx, h, "GetDueHistogram", req, h.svc.GetDueHistogram)
}

func (h *connectHandler) GetTaskAttempts(ctx context.Context, req *connect.Request[boomerangv1.GetTaskAttemptsRequest]) (*connect.Response[boomerangv1.GetTaskAttemptsResponse], error) {
	return serve(ctx, h, "GetTaskAttempts", req, h.svc.GetTaskAttempts)
}

func (h *connectHandler) ListCompleted(ctx context.Context, req *connect.Request[boomerangv1.ListCompletedRequest]) (*connect.Response[boomerangv1.ListCompletedResponse], error) {
	return serve(ctx, h, "ListCompleted", req, h.svc.ListCompleted)
}

func (h *connectHandler) ListAuditLog(ctx context.Context, req *connect.Request[boomerangv1.ListAuditLogRequest]) (*connect.Response[boomerangv1.ListAuditLogResponse], error) {
	return serve(ctx, h, "ListAuditLog", req, h.svc.ListAuditLog)
}

func (h *connectHandler) BulkDeadLetters(ctx context.Context, req *connect.Request[boomerangv1.BulkDeadLettersRequest]) (*connect.Response[boomerangv1.BulkDeadLettersResponse], error) {
	return serve(ctx, h, "BulkDeadLetters", req, h.svc.BulkDeadLetters)
}

func (h *connectHandler) ChangeCluster(ctx context.Context, req *connect.Request[boomerangv1.ChangeClusterRequest]) (*connect.Response[boomerangv1.ChangeClusterResponse], error) {
	return serve(ctx, h, "ChangeCluster", req, h.svc.ChangeCluster)
}

func (h *connectHandler) GetCluster(ctx context.Context, req *connect.Request[boomerangv1.GetClusterRequest]) (*connect.Response[boomerangv1.GetClusterResponse], error) {
	return serve(ctx, h, "GetCluster", req, h.svc.GetCluster)
}

func (h *connectHandler) ListPools(ctx context.Context, req *connect.Request[boomerangv1.ListPoolsRequest]) (*connect.Response[boomerangv1.ListPoolsResponse], error) {
	return serve(ctx, h, "ListPools", req, h.svc.ListPools)
}

func (h *connectHandler) GetRoutes(ctx context.Context, req *connect.Request[boomerangv1.GetRoutesRequest]) (*connect.Response[boomerangv1.GetRoutesResponse], error) {
	return serve(ctx, h, "GetRoutes", req, h.svc.GetRoutes)
}

package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
)

// errNoBody: a raw TCP request without an operation (or with one this
// server does not know).
var errNoBody = invalid("body", "must hold one operation; none was set or it is unknown to this server")

var requestBody = (&boomerangv1.Request{}).ProtoReflect().Descriptor().Oneofs().ByName("body")

// operation names a request's operation as the service method does
// ("RegisterTask"), or "" when it has none.
func operation(req *boomerangv1.Request) string {
	fd := req.ProtoReflect().WhichOneof(requestBody)
	if fd == nil || fd.Kind() != protoreflect.MessageKind {
		return ""
	}
	return strings.TrimSuffix(string(fd.Message().Name()), "Request")
}

// Handle runs one raw TCP request and returns its response: a result, or
// an Error. Every request but Login must carry a live session. loggedIn
// reports whether the request logged in or carried a live session.
func (s *Service) Handle(ctx context.Context, req *boomerangv1.Request) (resp *boomerangv1.Response, loggedIn bool) {
	resp = &boomerangv1.Response{RequestId: req.RequestId}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("request panicked", "operation", operation(req), "panic", r, "stack", string(debug.Stack()))
			resp.Body, resp.Error = nil, ErrorOf(fmt.Errorf("panic: %v", r))
		}
	}()
	loggedIn, err := s.handle(ctx, req, resp)
	if err != nil {
		resp.Body, resp.Error = nil, ErrorOf(err)
	}
	return resp, loggedIn
}

func (s *Service) handle(ctx context.Context, req *boomerangv1.Request, resp *boomerangv1.Response) (bool, error) {
	fd := req.ProtoReflect().WhichOneof(requestBody)
	if fd == nil || !req.ProtoReflect().Get(fd).Message().IsValid() {
		return false, errNoBody
	}
	switch b := req.Body.(type) {
	case *boomerangv1.Request_Login:
		r, err := s.Login(ctx, b.Login)
		resp.Body = &boomerangv1.Response_Login{Login: r}
		return err == nil, err
	case *boomerangv1.Request_RefreshSession:
		r, err := s.RefreshSession(ctx, req.SessionId, b.RefreshSession)
		resp.Body = &boomerangv1.Response_RefreshSession{RefreshSession: r}
		return err == nil, err
	case *boomerangv1.Request_Logout:
		r, err := s.Logout(ctx, req.SessionId, b.Logout)
		resp.Body = &boomerangv1.Response_Logout{Logout: r}
		return err == nil, err
	}
	p, err := s.Authenticate(req.SessionId)
	if err != nil {
		return false, err
	}
	err = s.handleAuthenticated(withRoute(ctx, req.Route), p, req, resp)
	s.audited(p, operation(req), req.ProtoReflect().Get(req.ProtoReflect().WhichOneof(requestBody)).Message().Interface(), err)
	return true, err
}

// run calls one operation and puts its result in the response body.
func run[Req, Resp any](ctx context.Context, p auth.Principal, in *Req,
	fn func(context.Context, auth.Principal, *Req) (*Resp, error), set func(*Resp)) error {
	r, err := fn(ctx, p, in)
	r, err = forwardOn(ctx, p, in, r, err)
	set(r)
	return err
}

func (s *Service) handleAuthenticated(ctx context.Context, p auth.Principal, req *boomerangv1.Request, resp *boomerangv1.Response) error {
	ctx = withForwarder(ctx, s.fwd.Load())
	switch b := req.Body.(type) {
	case *boomerangv1.Request_RegisterClient:
		return run(ctx, p, b.RegisterClient, s.RegisterClient, func(r *boomerangv1.RegisterClientResponse) {
			resp.Body = &boomerangv1.Response_RegisterClient{RegisterClient: r}
		})
	case *boomerangv1.Request_DeregisterClient:
		return run(ctx, p, b.DeregisterClient, s.DeregisterClient, func(r *boomerangv1.DeregisterClientResponse) {
			resp.Body = &boomerangv1.Response_DeregisterClient{DeregisterClient: r}
		})
	case *boomerangv1.Request_ListClients:
		return run(ctx, p, b.ListClients, s.ListClients, func(r *boomerangv1.ListClientsResponse) {
			resp.Body = &boomerangv1.Response_ListClients{ListClients: r}
		})
	case *boomerangv1.Request_GetClient:
		return run(ctx, p, b.GetClient, s.GetClient, func(r *boomerangv1.GetClientResponse) {
			resp.Body = &boomerangv1.Response_GetClient{GetClient: r}
		})
	case *boomerangv1.Request_UpdateClient:
		return run(ctx, p, b.UpdateClient, s.UpdateClient, func(r *boomerangv1.UpdateClientResponse) {
			resp.Body = &boomerangv1.Response_UpdateClient{UpdateClient: r}
		})
	case *boomerangv1.Request_ChangePassword:
		return run(ctx, p, b.ChangePassword, s.ChangePassword, func(r *boomerangv1.ChangePasswordResponse) {
			resp.Body = &boomerangv1.Response_ChangePassword{ChangePassword: r}
		})
	case *boomerangv1.Request_RotateSigningSecret:
		return run(ctx, p, b.RotateSigningSecret, s.RotateSigningSecret, func(r *boomerangv1.RotateSigningSecretResponse) {
			resp.Body = &boomerangv1.Response_RotateSigningSecret{RotateSigningSecret: r}
		})
	case *boomerangv1.Request_ListSessions:
		return run(ctx, p, b.ListSessions, s.ListSessions, func(r *boomerangv1.ListSessionsResponse) {
			resp.Body = &boomerangv1.Response_ListSessions{ListSessions: r}
		})
	case *boomerangv1.Request_RevokeSessions:
		return run(ctx, p, b.RevokeSessions, s.RevokeSessions, func(r *boomerangv1.RevokeSessionsResponse) {
			resp.Body = &boomerangv1.Response_RevokeSessions{RevokeSessions: r}
		})
	case *boomerangv1.Request_GetServerInfo:
		return run(ctx, p, b.GetServerInfo, s.GetServerInfo, func(r *boomerangv1.GetServerInfoResponse) {
			resp.Body = &boomerangv1.Response_GetServerInfo{GetServerInfo: r}
		})
	}
	return s.handleData(ctx, p, req, resp)
}

// handleData runs the operations on tasks, dead letters and groups.
func (s *Service) handleData(ctx context.Context, p auth.Principal, req *boomerangv1.Request, resp *boomerangv1.Response) error {
	switch b := req.Body.(type) {
	case *boomerangv1.Request_RegisterTask:
		return run(ctx, p, b.RegisterTask, s.RegisterTask, func(r *boomerangv1.RegisterTaskResponse) {
			resp.Body = &boomerangv1.Response_RegisterTask{RegisterTask: r}
		})
	case *boomerangv1.Request_RegisterTasks:
		return run(ctx, p, b.RegisterTasks, s.RegisterTasks, func(r *boomerangv1.RegisterTasksResponse) {
			resp.Body = &boomerangv1.Response_RegisterTasks{RegisterTasks: r}
		})
	case *boomerangv1.Request_UpdateTask:
		return run(ctx, p, b.UpdateTask, s.UpdateTask, func(r *boomerangv1.UpdateTaskResponse) {
			resp.Body = &boomerangv1.Response_UpdateTask{UpdateTask: r}
		})
	case *boomerangv1.Request_CancelTask:
		return run(ctx, p, b.CancelTask, s.CancelTask, func(r *boomerangv1.CancelTaskResponse) {
			resp.Body = &boomerangv1.Response_CancelTask{CancelTask: r}
		})
	case *boomerangv1.Request_GetTask:
		return run(ctx, p, b.GetTask, s.GetTask, func(r *boomerangv1.GetTaskResponse) {
			resp.Body = &boomerangv1.Response_GetTask{GetTask: r}
		})
	case *boomerangv1.Request_ListTasks:
		return run(ctx, p, b.ListTasks, s.ListTasks, func(r *boomerangv1.ListTasksResponse) {
			resp.Body = &boomerangv1.Response_ListTasks{ListTasks: r}
		})
	case *boomerangv1.Request_ListDeadLetters:
		return run(ctx, p, b.ListDeadLetters, s.ListDeadLetters, func(r *boomerangv1.ListDeadLettersResponse) {
			resp.Body = &boomerangv1.Response_ListDeadLetters{ListDeadLetters: r}
		})
	case *boomerangv1.Request_GetDeadLetter:
		return run(ctx, p, b.GetDeadLetter, s.GetDeadLetter, func(r *boomerangv1.GetDeadLetterResponse) {
			resp.Body = &boomerangv1.Response_GetDeadLetter{GetDeadLetter: r}
		})
	case *boomerangv1.Request_ReplayDeadLetter:
		return run(ctx, p, b.ReplayDeadLetter, s.ReplayDeadLetter, func(r *boomerangv1.ReplayDeadLetterResponse) {
			resp.Body = &boomerangv1.Response_ReplayDeadLetter{ReplayDeadLetter: r}
		})
	case *boomerangv1.Request_DeleteDeadLetter:
		return run(ctx, p, b.DeleteDeadLetter, s.DeleteDeadLetter, func(r *boomerangv1.DeleteDeadLetterResponse) {
			resp.Body = &boomerangv1.Response_DeleteDeadLetter{DeleteDeadLetter: r}
		})
	case *boomerangv1.Request_GetGroup:
		return run(ctx, p, b.GetGroup, s.GetGroup, func(r *boomerangv1.GetGroupResponse) {
			resp.Body = &boomerangv1.Response_GetGroup{GetGroup: r}
		})
	case *boomerangv1.Request_UnblockGroup:
		return run(ctx, p, b.UnblockGroup, s.UnblockGroup, func(r *boomerangv1.UnblockGroupResponse) {
			resp.Body = &boomerangv1.Response_UnblockGroup{UnblockGroup: r}
		})
	case *boomerangv1.Request_SkipGroup:
		return run(ctx, p, b.SkipGroup, s.SkipGroup, func(r *boomerangv1.SkipGroupResponse) {
			resp.Body = &boomerangv1.Response_SkipGroup{SkipGroup: r}
		})
	case *boomerangv1.Request_CancelTasks:
		return run(ctx, p, b.CancelTasks, s.CancelTasks, func(r *boomerangv1.CancelTasksResponse) {
			resp.Body = &boomerangv1.Response_CancelTasks{CancelTasks: r}
		})
	case *boomerangv1.Request_PurgeDeadLetters:
		return run(ctx, p, b.PurgeDeadLetters, s.PurgeDeadLetters, func(r *boomerangv1.PurgeDeadLettersResponse) {
			resp.Body = &boomerangv1.Response_PurgeDeadLetters{PurgeDeadLetters: r}
		})
	case *boomerangv1.Request_ListGroups:
		return run(ctx, p, b.ListGroups, s.ListGroups, func(r *boomerangv1.ListGroupsResponse) {
			resp.Body = &boomerangv1.Response_ListGroups{ListGroups: r}
		})
	case *boomerangv1.Request_GetStats:
		return run(ctx, p, b.GetStats, s.GetStats, func(r *boomerangv1.GetStatsResponse) {
			resp.Body = &boomerangv1.Response_GetStats{GetStats: r}
		})
	case *boomerangv1.Request_GetDueHistogram:
		return run(ctx, p, b.GetDueHistogram, s.GetDueHistogram, func(r *boomerangv1.GetDueHistogramResponse) {
			resp.Body = &boomerangv1.Response_GetDueHistogram{GetDueHistogram: r}
		})
	case *boomerangv1.Request_GetTaskAttempts:
		return run(ctx, p, b.GetTaskAttempts, s.GetTaskAttempts, func(r *boomerangv1.GetTaskAttemptsResponse) {
			resp.Body = &boomerangv1.Response_GetTaskAttempts{GetTaskAttempts: r}
		})
	case *boomerangv1.Request_ListCompleted:
		return run(ctx, p, b.ListCompleted, s.ListCompleted, func(r *boomerangv1.ListCompletedResponse) {
			resp.Body = &boomerangv1.Response_ListCompleted{ListCompleted: r}
		})
	case *boomerangv1.Request_ListAuditLog:
		return run(ctx, p, b.ListAuditLog, s.ListAuditLog, func(r *boomerangv1.ListAuditLogResponse) {
			resp.Body = &boomerangv1.Response_ListAuditLog{ListAuditLog: r}
		})
	case *boomerangv1.Request_BulkDeadLetters:
		return run(ctx, p, b.BulkDeadLetters, s.BulkDeadLetters, func(r *boomerangv1.BulkDeadLettersResponse) {
			resp.Body = &boomerangv1.Response_BulkDeadLetters{BulkDeadLetters: r}
		})
	case *boomerangv1.Request_ChangeCluster:
		return run(ctx, p, b.ChangeCluster, s.ChangeCluster, func(r *boomerangv1.ChangeClusterResponse) {
			resp.Body = &boomerangv1.Response_ChangeCluster{ChangeCluster: r}
		})
	case *boomerangv1.Request_GetCluster:
		return run(ctx, p, b.GetCluster, s.GetCluster, func(r *boomerangv1.GetClusterResponse) {
			resp.Body = &boomerangv1.Response_GetCluster{GetCluster: r}
		})
	case *boomerangv1.Request_GetRoutes:
		return run(ctx, p, b.GetRoutes, s.GetRoutes, func(r *boomerangv1.GetRoutesResponse) {
			resp.Body = &boomerangv1.Response_GetRoutes{GetRoutes: r}
		})
	case *boomerangv1.Request_ListPools:
		return run(ctx, p, b.ListPools, s.ListPools, func(r *boomerangv1.ListPoolsResponse) {
			resp.Body = &boomerangv1.Response_ListPools{ListPools: r}
		})
	}
	return errNoBody
}

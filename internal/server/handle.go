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
// an Error. Every request but Login must carry a live session.
func (s *Service) Handle(ctx context.Context, req *boomerangv1.Request) (resp *boomerangv1.Response) {
	resp = &boomerangv1.Response{RequestId: req.RequestId}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("request panicked", "operation", operation(req), "panic", r, "stack", string(debug.Stack()))
			resp.Body, resp.Error = nil, ErrorOf(fmt.Errorf("panic: %v", r))
		}
	}()
	if err := s.handle(ctx, req, resp); err != nil {
		resp.Body, resp.Error = nil, ErrorOf(err)
	}
	return resp
}

func (s *Service) handle(ctx context.Context, req *boomerangv1.Request, resp *boomerangv1.Response) error {
	fd := req.ProtoReflect().WhichOneof(requestBody)
	if fd == nil || !req.ProtoReflect().Get(fd).Message().IsValid() {
		return errNoBody
	}
	switch b := req.Body.(type) {
	case *boomerangv1.Request_Login:
		r, err := s.Login(ctx, b.Login)
		resp.Body = &boomerangv1.Response_Login{Login: r}
		return err
	case *boomerangv1.Request_RefreshSession:
		r, err := s.RefreshSession(ctx, req.SessionId, b.RefreshSession)
		resp.Body = &boomerangv1.Response_RefreshSession{RefreshSession: r}
		return err
	}
	p, err := s.Authenticate(req.SessionId)
	if err != nil {
		return err
	}
	return s.handleAuthenticated(ctx, p, req, resp)
}

func (s *Service) handleAuthenticated(ctx context.Context, p auth.Principal, req *boomerangv1.Request, resp *boomerangv1.Response) error {
	var err error
	switch b := req.Body.(type) {
	case *boomerangv1.Request_RegisterClient:
		var r *boomerangv1.RegisterClientResponse
		r, err = s.RegisterClient(ctx, p, b.RegisterClient)
		resp.Body = &boomerangv1.Response_RegisterClient{RegisterClient: r}
	case *boomerangv1.Request_DeregisterClient:
		var r *boomerangv1.DeregisterClientResponse
		r, err = s.DeregisterClient(ctx, p, b.DeregisterClient)
		resp.Body = &boomerangv1.Response_DeregisterClient{DeregisterClient: r}
	case *boomerangv1.Request_ListClients:
		var r *boomerangv1.ListClientsResponse
		r, err = s.ListClients(ctx, p, b.ListClients)
		resp.Body = &boomerangv1.Response_ListClients{ListClients: r}
	case *boomerangv1.Request_RegisterTask:
		var r *boomerangv1.RegisterTaskResponse
		r, err = s.RegisterTask(ctx, p, b.RegisterTask)
		resp.Body = &boomerangv1.Response_RegisterTask{RegisterTask: r}
	case *boomerangv1.Request_UpdateTask:
		var r *boomerangv1.UpdateTaskResponse
		r, err = s.UpdateTask(ctx, p, b.UpdateTask)
		resp.Body = &boomerangv1.Response_UpdateTask{UpdateTask: r}
	case *boomerangv1.Request_CancelTask:
		var r *boomerangv1.CancelTaskResponse
		r, err = s.CancelTask(ctx, p, b.CancelTask)
		resp.Body = &boomerangv1.Response_CancelTask{CancelTask: r}
	case *boomerangv1.Request_GetTask:
		var r *boomerangv1.GetTaskResponse
		r, err = s.GetTask(ctx, p, b.GetTask)
		resp.Body = &boomerangv1.Response_GetTask{GetTask: r}
	case *boomerangv1.Request_ListTasks:
		var r *boomerangv1.ListTasksResponse
		r, err = s.ListTasks(ctx, p, b.ListTasks)
		resp.Body = &boomerangv1.Response_ListTasks{ListTasks: r}
	case *boomerangv1.Request_ListDeadLetters:
		var r *boomerangv1.ListDeadLettersResponse
		r, err = s.ListDeadLetters(ctx, p, b.ListDeadLetters)
		resp.Body = &boomerangv1.Response_ListDeadLetters{ListDeadLetters: r}
	case *boomerangv1.Request_GetDeadLetter:
		var r *boomerangv1.GetDeadLetterResponse
		r, err = s.GetDeadLetter(ctx, p, b.GetDeadLetter)
		resp.Body = &boomerangv1.Response_GetDeadLetter{GetDeadLetter: r}
	case *boomerangv1.Request_ReplayDeadLetter:
		var r *boomerangv1.ReplayDeadLetterResponse
		r, err = s.ReplayDeadLetter(ctx, p, b.ReplayDeadLetter)
		resp.Body = &boomerangv1.Response_ReplayDeadLetter{ReplayDeadLetter: r}
	case *boomerangv1.Request_DeleteDeadLetter:
		var r *boomerangv1.DeleteDeadLetterResponse
		r, err = s.DeleteDeadLetter(ctx, p, b.DeleteDeadLetter)
		resp.Body = &boomerangv1.Response_DeleteDeadLetter{DeleteDeadLetter: r}
	case *boomerangv1.Request_GetGroup:
		var r *boomerangv1.GetGroupResponse
		r, err = s.GetGroup(ctx, p, b.GetGroup)
		resp.Body = &boomerangv1.Response_GetGroup{GetGroup: r}
	case *boomerangv1.Request_UnblockGroup:
		var r *boomerangv1.UnblockGroupResponse
		r, err = s.UnblockGroup(ctx, p, b.UnblockGroup)
		resp.Body = &boomerangv1.Response_UnblockGroup{UnblockGroup: r}
	case *boomerangv1.Request_SkipGroup:
		var r *boomerangv1.SkipGroupResponse
		r, err = s.SkipGroup(ctx, p, b.SkipGroup)
		resp.Body = &boomerangv1.Response_SkipGroup{SkipGroup: r}
	case *boomerangv1.Request_CancelTasks:
		var r *boomerangv1.CancelTasksResponse
		r, err = s.CancelTasks(ctx, p, b.CancelTasks)
		resp.Body = &boomerangv1.Response_CancelTasks{CancelTasks: r}
	case *boomerangv1.Request_PurgeDeadLetters:
		var r *boomerangv1.PurgeDeadLettersResponse
		r, err = s.PurgeDeadLetters(ctx, p, b.PurgeDeadLetters)
		resp.Body = &boomerangv1.Response_PurgeDeadLetters{PurgeDeadLetters: r}
	case *boomerangv1.Request_GetServerInfo:
		var r *boomerangv1.GetServerInfoResponse
		r, err = s.GetServerInfo(ctx, p, b.GetServerInfo)
		resp.Body = &boomerangv1.Response_GetServerInfo{GetServerInfo: r}
	default:
		return errNoBody
	}
	return err
}

package client

import (
	"context"
	"fmt"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// The methods below are the service's operations, one each, over the raw
// TCP transport. Each returns the server's response, or an error that is
// an *Error when the server refused the request (see the sentinels), and
// otherwise a lost connection, ErrClosed or the context's error.

// Login logs in and makes the new session the Client's. Dial does this
// already when given credentials.
func (c *Client) Login(ctx context.Context, in *boomerangv1.LoginRequest) (*boomerangv1.LoginResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_Login{Login: in}})
	return need(r, err, (*boomerangv1.Response).GetLogin)
}

// RefreshSession replaces the session with a new one that expires later,
// and makes it the Client's. The Client does this by itself before the
// session expires.
func (c *Client) RefreshSession(ctx context.Context, in *boomerangv1.RefreshSessionRequest) (*boomerangv1.RefreshSessionResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_RefreshSession{RefreshSession: in}})
	return need(r, err, (*boomerangv1.Response).GetRefreshSession)
}

// RegisterClient registers a client (admin only). The response carries the
// webhook signing secret, shown only this once.
func (c *Client) RegisterClient(ctx context.Context, in *boomerangv1.RegisterClientRequest) (*boomerangv1.RegisterClientResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_RegisterClient{RegisterClient: in}})
	return need(r, err, (*boomerangv1.Response).GetRegisterClient)
}

// DeregisterClient removes a client (admin only).
func (c *Client) DeregisterClient(ctx context.Context, in *boomerangv1.DeregisterClientRequest) (*boomerangv1.DeregisterClientResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_DeregisterClient{DeregisterClient: in}})
	return empty(r, err, (*boomerangv1.Response).GetDeregisterClient)
}

// ListClients lists the registered clients (admin only).
func (c *Client) ListClients(ctx context.Context, in *boomerangv1.ListClientsRequest) (*boomerangv1.ListClientsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListClients{ListClients: in}})
	return empty(r, err, (*boomerangv1.Response).GetListClients)
}

// RegisterTask schedules a task. It is acknowledged only once the task is
// on disk. See Schedule for a shorter form.
func (c *Client) RegisterTask(ctx context.Context, in *boomerangv1.RegisterTaskRequest) (*boomerangv1.RegisterTaskResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_RegisterTask{RegisterTask: in}})
	return need(r, err, (*boomerangv1.Response).GetRegisterTask)
}

// RegisterTasks schedules up to MaxBatch tasks in one request; each task
// succeeds or fails on its own, and the results come in the order of the
// tasks, without payloads. The request must fit the server's frame
// limit. See ScheduleBatch, which splits any number of tasks into such
// requests.
func (c *Client) RegisterTasks(ctx context.Context, in *boomerangv1.RegisterTasksRequest) (*boomerangv1.RegisterTasksResponse, error) {
	if c.router != nil {
		return c.router.registerTasks(ctx, in)
	}
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_RegisterTasks{RegisterTasks: in}})
	return empty(r, err, (*boomerangv1.Response).GetRegisterTasks)
}

// UpdateTask changes a task's payload, due time or repeat interval.
func (c *Client) UpdateTask(ctx context.Context, in *boomerangv1.UpdateTaskRequest) (*boomerangv1.UpdateTaskResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_UpdateTask{UpdateTask: in}})
	return need(r, err, (*boomerangv1.Response).GetUpdateTask)
}

// CancelTask deletes a task. A task whose delivery is under way answers
// ErrConflict.
func (c *Client) CancelTask(ctx context.Context, in *boomerangv1.CancelTaskRequest) (*boomerangv1.CancelTaskResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_CancelTask{CancelTask: in}})
	return empty(r, err, (*boomerangv1.Response).GetCancelTask)
}

// GetTask returns one task.
func (c *Client) GetTask(ctx context.Context, in *boomerangv1.GetTaskRequest) (*boomerangv1.GetTaskResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetTask{GetTask: in}})
	return need(r, err, (*boomerangv1.Response).GetGetTask)
}

// ListTasks returns one page of tasks. See Tasks for all pages.
func (c *Client) ListTasks(ctx context.Context, in *boomerangv1.ListTasksRequest) (*boomerangv1.ListTasksResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListTasks{ListTasks: in}})
	return empty(r, err, (*boomerangv1.Response).GetListTasks)
}

// ListDeadLetters returns one page of dead letters. See DeadLetters for
// all pages.
func (c *Client) ListDeadLetters(ctx context.Context, in *boomerangv1.ListDeadLettersRequest) (*boomerangv1.ListDeadLettersResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListDeadLetters{ListDeadLetters: in}})
	return empty(r, err, (*boomerangv1.Response).GetListDeadLetters)
}

// GetDeadLetter returns one dead letter.
func (c *Client) GetDeadLetter(ctx context.Context, in *boomerangv1.GetDeadLetterRequest) (*boomerangv1.GetDeadLetterResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetDeadLetter{GetDeadLetter: in}})
	return need(r, err, (*boomerangv1.Response).GetGetDeadLetter)
}

// ReplayDeadLetter schedules a dead letter's task again.
func (c *Client) ReplayDeadLetter(ctx context.Context, in *boomerangv1.ReplayDeadLetterRequest) (*boomerangv1.ReplayDeadLetterResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ReplayDeadLetter{ReplayDeadLetter: in}})
	return need(r, err, (*boomerangv1.Response).GetReplayDeadLetter)
}

// DeleteDeadLetter deletes a dead letter.
func (c *Client) DeleteDeadLetter(ctx context.Context, in *boomerangv1.DeleteDeadLetterRequest) (*boomerangv1.DeleteDeadLetterResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_DeleteDeadLetter{DeleteDeadLetter: in}})
	return empty(r, err, (*boomerangv1.Response).GetDeleteDeadLetter)
}

// GetGroup returns a group's state.
func (c *Client) GetGroup(ctx context.Context, in *boomerangv1.GetGroupRequest) (*boomerangv1.GetGroupResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetGroup{GetGroup: in}})
	return need(r, err, (*boomerangv1.Response).GetGetGroup)
}

// UnblockGroup delivers a blocked group's head again, then lets the group
// go on.
func (c *Client) UnblockGroup(ctx context.Context, in *boomerangv1.UnblockGroupRequest) (*boomerangv1.UnblockGroupResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_UnblockGroup{UnblockGroup: in}})
	return empty(r, err, (*boomerangv1.Response).GetUnblockGroup)
}

// SkipGroup leaves a blocked group's head in the dead letter queue and
// lets the group go on.
func (c *Client) SkipGroup(ctx context.Context, in *boomerangv1.SkipGroupRequest) (*boomerangv1.SkipGroupResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_SkipGroup{SkipGroup: in}})
	return empty(r, err, (*boomerangv1.Response).GetSkipGroup)
}

// CancelTasks cancels every task of a client, or of one of its groups,
// except those being delivered; with DryRun it only counts them.
func (c *Client) CancelTasks(ctx context.Context, in *boomerangv1.CancelTasksRequest) (*boomerangv1.CancelTasksResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_CancelTasks{CancelTasks: in}})
	return need(r, err, (*boomerangv1.Response).GetCancelTasks)
}

// PurgeDeadLetters deletes every dead letter matching a filter, except
// groups' blocked heads; with DryRun it only counts them.
func (c *Client) PurgeDeadLetters(ctx context.Context, in *boomerangv1.PurgeDeadLettersRequest) (*boomerangv1.PurgeDeadLettersResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_PurgeDeadLetters{PurgeDeadLetters: in}})
	return need(r, err, (*boomerangv1.Response).GetPurgeDeadLetters)
}

// GetServerInfo returns the server's version, addresses and limits.
func (c *Client) GetServerInfo(ctx context.Context, in *boomerangv1.GetServerInfoRequest) (*boomerangv1.GetServerInfoResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: in}})
	return need(r, err, (*boomerangv1.Response).GetGetServerInfo)
}

// Logout ends the Client's session on the server. Calls after it log in
// again when the Client has credentials, and fail otherwise.
func (c *Client) Logout(ctx context.Context, in *boomerangv1.LogoutRequest) (*boomerangv1.LogoutResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_Logout{Logout: in}})
	return empty(r, err, (*boomerangv1.Response).GetLogout)
}

// ListSessions lists live sessions: the client's own, or (admin and
// read-only) any client's or everyone's.
func (c *Client) ListSessions(ctx context.Context, in *boomerangv1.ListSessionsRequest) (*boomerangv1.ListSessionsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListSessions{ListSessions: in}})
	return empty(r, err, (*boomerangv1.Response).GetListSessions)
}

// RevokeSessions ends a session by its handle, or all of a client's.
func (c *Client) RevokeSessions(ctx context.Context, in *boomerangv1.RevokeSessionsRequest) (*boomerangv1.RevokeSessionsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_RevokeSessions{RevokeSessions: in}})
	return empty(r, err, (*boomerangv1.Response).GetRevokeSessions)
}

// GetClient shows a client: the caller's own, or (admin and read-only)
// any.
func (c *Client) GetClient(ctx context.Context, in *boomerangv1.GetClientRequest) (*boomerangv1.GetClientResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetClient{GetClient: in}})
	return need(r, err, (*boomerangv1.Response).GetGetClient)
}

// UpdateClient changes a client's settings (admin only).
func (c *Client) UpdateClient(ctx context.Context, in *boomerangv1.UpdateClientRequest) (*boomerangv1.UpdateClientResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_UpdateClient{UpdateClient: in}})
	return need(r, err, (*boomerangv1.Response).GetUpdateClient)
}

// ChangePassword sets a password: the caller's own with the current one,
// or (admin) any client's.
func (c *Client) ChangePassword(ctx context.Context, in *boomerangv1.ChangePasswordRequest) (*boomerangv1.ChangePasswordResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ChangePassword{ChangePassword: in}})
	return empty(r, err, (*boomerangv1.Response).GetChangePassword)
}

// RotateSigningSecret replaces a client's webhook signing secret; the
// response carries the new one, shown only this once.
func (c *Client) RotateSigningSecret(ctx context.Context, in *boomerangv1.RotateSigningSecretRequest) (*boomerangv1.RotateSigningSecretResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_RotateSigningSecret{RotateSigningSecret: in}})
	return need(r, err, (*boomerangv1.Response).GetRotateSigningSecret)
}

// need returns the response body get extracts, which must be there.
func need[T any](r *boomerangv1.Response, err error, get func(*boomerangv1.Response) *T) (*T, error) {
	if err != nil {
		return nil, err
	}
	if v := get(r); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("%w: the response to request %d has no %T body", ErrProtocol, r.GetRequestId(), (*T)(nil))
}

// empty is need for bodies that may legitimately have no fields, which a
// server may leave out altogether.
func empty[T any](r *boomerangv1.Response, err error, get func(*boomerangv1.Response) *T) (*T, error) {
	if err != nil {
		return nil, err
	}
	if v := get(r); v != nil {
		return v, nil
	}
	return new(T), nil
}

package conformance

import (
	"fmt"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/server"
	"github.com/boomerangd/boomerang/internal/store"
)

// Values chosen to catch the usual mistakes: ids that do not fit a
// float64 (2^53+1) or a signed integer (2^64-1), a payload that is not
// UTF-8, names outside ASCII, explicit presence of empty or false
// optional fields, and a negative int64 (a ten-byte varint).
const (
	session  = "q0Jb9v3nXh2cTt7mKk1sYw4eLr8aPz6uGf5dNi0oHjE"
	bigID    = uint64(1)<<53 + 1
	maxID    = uint64(math.MaxUint64)
	taskID   = uint64(281474976710657)
	dueMs    = int64(1767225600000)
	createMs = int64(1767225500123)
	group    = "customer 7 / Zürich"
)

var payload = []byte{0x00, 0xff, 0xfe, 'i', 'n', 'v', 'o', 'i', 'c', 'e', 0x80}

func callback() *boomerangv1.Callback {
	return &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: "https://billing.example/hooks/boomerang", TimeoutMs: 5000, Pool: "webhooks"}
}

func retryPolicy() *boomerangv1.RetryPolicy {
	return &boomerangv1.RetryPolicy{Backoff: boomerangv1.Backoff_BACKOFF_EXPONENTIAL, InitialIntervalMs: 1000, MaxIntervalMs: 300000, Multiplier: 2.5, Jitter: 0.2, MaxAttempts: 10}
}

func clientConfig() *boomerangv1.ClientConfig {
	return &boomerangv1.ClientConfig{
		Id: "billing", Callback: callback(), Retry: retryPolicy(),
		DeadLetters: &boomerangv1.DeadLetterPolicy{MaxEntries: 1000, RetentionMs: 604800000},
		DefaultMode: boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR, CreatedMs: createMs,
	}
}

// task has every field set.
func task() *boomerangv1.Task {
	return &boomerangv1.Task{
		Id: taskID, Client: "billing", Group: group, Payload: payload, FireAtMs: dueMs,
		RepeatIntervalMs: 3600000, Seq: bigID, Mode: boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
		Status: boomerangv1.TaskStatus_TASK_STATUS_RETRYING, Attempts: 2, NextAttemptMs: dueMs + 2000,
		LastError: "HTTP 503: upstream unavailable", Fires: 41, IdempotencyKey: "invoice-42",
		Callback:  &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_TCP, Endpoint: "10.0.0.7:9000"},
		Retry:     &boomerangv1.RetryPolicy{Backoff: boomerangv1.Backoff_BACKOFF_FIXED, InitialIntervalMs: 500, MaxAttempts: 3},
		CreatedMs: createMs, UpdatedMs: createMs + 1,
	}
}

// plainTask is a task with only what a fresh one-shot registration has.
func plainTask(id uint64) *boomerangv1.Task {
	return &boomerangv1.Task{Id: id, Client: "billing", FireAtMs: dueMs, Seq: 1, Mode: boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR,
		Status: boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED, CreatedMs: createMs, UpdatedMs: createMs}
}

func deadLetter() *boomerangv1.DeadLetter {
	return &boomerangv1.DeadLetter{Id: bigID, Task: task(), LastError: "HTTP 410: gone", Attempts: 3, FailedMs: dueMs + 9000, BlocksGroup: true}
}

type op struct {
	name string
	req  *boomerangv1.Request
	resp *boomerangv1.Response
}

// operations returns a request and a successful response for each RPC of
// BoomerangService, in the order of the service, plus extra requests
// that exercise oneofs and presence.
func operations() []op {
	ops := []op{
		{"login",
			&boomerangv1.Request{RequestId: 1, Body: &boomerangv1.Request_Login{Login: &boomerangv1.LoginRequest{ClientId: "billing", Password: "correct horse battery staple"}}},
			&boomerangv1.Response{RequestId: 1, Body: &boomerangv1.Response_Login{Login: &boomerangv1.LoginResponse{SessionId: session, ExpiresAtMs: dueMs + 3600000, Admin: true}}}},
		{"refresh_session",
			&boomerangv1.Request{RequestId: 2, SessionId: session, Body: &boomerangv1.Request_RefreshSession{RefreshSession: &boomerangv1.RefreshSessionRequest{}}},
			&boomerangv1.Response{RequestId: 2, Body: &boomerangv1.Response_RefreshSession{RefreshSession: &boomerangv1.RefreshSessionResponse{SessionId: "Zx9" + session[3:], ExpiresAtMs: dueMs + 7200000}}}},
		{"register_client",
			&boomerangv1.Request{RequestId: 3, SessionId: session, Body: &boomerangv1.Request_RegisterClient{RegisterClient: &boomerangv1.RegisterClientRequest{
				ClientId: "billing", Password: "correct horse battery staple", Admin: false, Callback: callback(), Retry: retryPolicy(),
				DeadLetters: &boomerangv1.DeadLetterPolicy{MaxEntries: 1000, RetentionMs: 604800000},
				DefaultMode: boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR, SigningSecret: secretBytes(),
			}}},
			&boomerangv1.Response{RequestId: 3, Body: &boomerangv1.Response_RegisterClient{RegisterClient: &boomerangv1.RegisterClientResponse{Client: clientConfig(), SigningSecret: secretBytes()}}}},
		{"deregister_client",
			&boomerangv1.Request{RequestId: 4, SessionId: session, Body: &boomerangv1.Request_DeregisterClient{DeregisterClient: &boomerangv1.DeregisterClientRequest{ClientId: "billing"}}},
			&boomerangv1.Response{RequestId: 4, Body: &boomerangv1.Response_DeregisterClient{DeregisterClient: &boomerangv1.DeregisterClientResponse{}}}},
		{"list_clients",
			&boomerangv1.Request{RequestId: 5, SessionId: session, Body: &boomerangv1.Request_ListClients{ListClients: &boomerangv1.ListClientsRequest{}}},
			&boomerangv1.Response{RequestId: 5, Body: &boomerangv1.Response_ListClients{ListClients: &boomerangv1.ListClientsResponse{Clients: []*boomerangv1.ClientConfig{
				{Id: "admin", Admin: true, CreatedMs: createMs - 1000}, clientConfig(),
			}}}}},
		{"register_task",
			&boomerangv1.Request{RequestId: 6, SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
				Payload: payload, When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 90000}, Group: group,
				Mode: boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR, Callback: callback(), Retry: retryPolicy(), IdempotencyKey: "invoice-42",
			}}},
			&boomerangv1.Response{RequestId: 6, Body: &boomerangv1.Response_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskResponse{Task: task(), Created: true}}}},
		{"update_task",
			&boomerangv1.Request{RequestId: 7, SessionId: session, Body: &boomerangv1.Request_UpdateTask{UpdateTask: &boomerangv1.UpdateTaskRequest{
				Id: bigID, Payload: []byte{}, When: &boomerangv1.UpdateTaskRequest_FireAtMs{FireAtMs: dueMs}, RepeatIntervalMs: proto.Int64(0),
			}}},
			&boomerangv1.Response{RequestId: 7, Body: &boomerangv1.Response_UpdateTask{UpdateTask: &boomerangv1.UpdateTaskResponse{Task: plainTask(bigID)}}}},
		{"cancel_task",
			&boomerangv1.Request{RequestId: 8, SessionId: session, Body: &boomerangv1.Request_CancelTask{CancelTask: &boomerangv1.CancelTaskRequest{Id: maxID}}},
			&boomerangv1.Response{RequestId: 8, Body: &boomerangv1.Response_CancelTask{CancelTask: &boomerangv1.CancelTaskResponse{}}}},
		{"get_task",
			&boomerangv1.Request{RequestId: 9, SessionId: session, Body: &boomerangv1.Request_GetTask{GetTask: &boomerangv1.GetTaskRequest{Id: taskID}}},
			&boomerangv1.Response{RequestId: 9, Body: &boomerangv1.Response_GetTask{GetTask: &boomerangv1.GetTaskResponse{Task: task()}}}},
		{"list_tasks",
			&boomerangv1.Request{RequestId: 10, SessionId: session, Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{
				Client: "billing", Group: group, DueFromMs: dueMs, DueToMs: dueMs + 86400000, Recurring: proto.Bool(false),
				Status: boomerangv1.TaskStatus_TASK_STATUS_RETRYING, PageToken: bigID, PageSize: 1000,
			}}},
			&boomerangv1.Response{RequestId: 10, Body: &boomerangv1.Response_ListTasks{ListTasks: &boomerangv1.ListTasksResponse{
				Tasks: []*boomerangv1.Task{task(), plainTask(taskID + 1)}, NextPageToken: maxID,
			}}}},
		{"list_dead_letters",
			&boomerangv1.Request{RequestId: 11, SessionId: session, Body: &boomerangv1.Request_ListDeadLetters{ListDeadLetters: &boomerangv1.ListDeadLettersRequest{Client: "billing", PageToken: 7, PageSize: 50}}},
			&boomerangv1.Response{RequestId: 11, Body: &boomerangv1.Response_ListDeadLetters{ListDeadLetters: &boomerangv1.ListDeadLettersResponse{DeadLetters: []*boomerangv1.DeadLetter{deadLetter()}}}}},
		{"get_dead_letter",
			&boomerangv1.Request{RequestId: 12, SessionId: session, Body: &boomerangv1.Request_GetDeadLetter{GetDeadLetter: &boomerangv1.GetDeadLetterRequest{Id: bigID}}},
			&boomerangv1.Response{RequestId: 12, Body: &boomerangv1.Response_GetDeadLetter{GetDeadLetter: &boomerangv1.GetDeadLetterResponse{DeadLetter: deadLetter()}}}},
		{"replay_dead_letter",
			&boomerangv1.Request{RequestId: 13, SessionId: session, Body: &boomerangv1.Request_ReplayDeadLetter{ReplayDeadLetter: &boomerangv1.ReplayDeadLetterRequest{Id: bigID}}},
			&boomerangv1.Response{RequestId: 13, Body: &boomerangv1.Response_ReplayDeadLetter{ReplayDeadLetter: &boomerangv1.ReplayDeadLetterResponse{Task: plainTask(taskID + 2)}}}},
		{"delete_dead_letter",
			&boomerangv1.Request{RequestId: 14, SessionId: session, Body: &boomerangv1.Request_DeleteDeadLetter{DeleteDeadLetter: &boomerangv1.DeleteDeadLetterRequest{Id: bigID}}},
			&boomerangv1.Response{RequestId: 14, Body: &boomerangv1.Response_DeleteDeadLetter{DeleteDeadLetter: &boomerangv1.DeleteDeadLetterResponse{}}}},
		{"get_group",
			&boomerangv1.Request{RequestId: 15, SessionId: session, Body: &boomerangv1.Request_GetGroup{GetGroup: &boomerangv1.GetGroupRequest{Client: "billing", Group: group}}},
			&boomerangv1.Response{RequestId: 15, Body: &boomerangv1.Response_GetGroup{GetGroup: &boomerangv1.GetGroupResponse{Group: &boomerangv1.Group{
				Client: "billing", Group: group, Tasks: 12, Blocked: true, BlockedDeadLetterId: bigID, BlockedSinceMs: dueMs + 9000,
			}}}}},
		{"unblock_group",
			&boomerangv1.Request{RequestId: 16, SessionId: session, Body: &boomerangv1.Request_UnblockGroup{UnblockGroup: &boomerangv1.UnblockGroupRequest{Group: group}}},
			&boomerangv1.Response{RequestId: 16, Body: &boomerangv1.Response_UnblockGroup{UnblockGroup: &boomerangv1.UnblockGroupResponse{Task: plainTask(taskID + 3)}}}},
		{"skip_group",
			&boomerangv1.Request{RequestId: 17, SessionId: session, Body: &boomerangv1.Request_SkipGroup{SkipGroup: &boomerangv1.SkipGroupRequest{Client: "billing", Group: group}}},
			&boomerangv1.Response{RequestId: 17, Body: &boomerangv1.Response_SkipGroup{SkipGroup: &boomerangv1.SkipGroupResponse{}}}},
		{"cancel_tasks",
			&boomerangv1.Request{RequestId: 23, SessionId: session, Body: &boomerangv1.Request_CancelTasks{CancelTasks: &boomerangv1.CancelTasksRequest{Client: "billing", Group: group, DryRun: true}}},
			&boomerangv1.Response{RequestId: 23, Body: &boomerangv1.Response_CancelTasks{CancelTasks: &boomerangv1.CancelTasksResponse{Matched: 12, Cancelled: 0, Skipped: 1}}}},
		{"purge_dead_letters",
			&boomerangv1.Request{RequestId: 24, SessionId: session, Body: &boomerangv1.Request_PurgeDeadLetters{PurgeDeadLetters: &boomerangv1.PurgeDeadLettersRequest{
				Client: "billing", Group: group, FailedBeforeMs: dueMs, ErrorContains: "HTTP 404",
			}}},
			&boomerangv1.Response{RequestId: 24, Body: &boomerangv1.Response_PurgeDeadLetters{PurgeDeadLetters: &boomerangv1.PurgeDeadLettersResponse{Matched: 7, Deleted: 6, Skipped: 1}}}},
		{"get_server_info",
			&boomerangv1.Request{RequestId: 18, SessionId: session, Body: &boomerangv1.Request_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoRequest{}}},
			&boomerangv1.Response{RequestId: 18, Body: &boomerangv1.Response_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoResponse{
				Version: "v1.2.3", StartedMs: createMs, Partitions: 4, TcpAddress: "127.0.0.1:7070", HttpAddress: "127.0.0.1:7071",
				MaxPayloadBytes: 1 << 20, MaxFrameBytes: 1<<20 + 65536,
			}}}},
		{"logout",
			&boomerangv1.Request{RequestId: 40, SessionId: session, Body: &boomerangv1.Request_Logout{Logout: &boomerangv1.LogoutRequest{}}},
			&boomerangv1.Response{RequestId: 40, Body: &boomerangv1.Response_Logout{Logout: &boomerangv1.LogoutResponse{}}}},
		{"list_sessions",
			&boomerangv1.Request{RequestId: 41, SessionId: session, Body: &boomerangv1.Request_ListSessions{ListSessions: &boomerangv1.ListSessionsRequest{Client: "billing"}}},
			&boomerangv1.Response{RequestId: 41, Body: &boomerangv1.Response_ListSessions{ListSessions: &boomerangv1.ListSessionsResponse{Sessions: []*boomerangv1.SessionInfo{{
				Handle: "3f2a9c0d81b4e7a6", Client: "billing", Role: boomerangv1.Role_ROLE_READ_ONLY, CreatedMs: createMs,
				ExpiresMs: createMs + 3600000, Source: "[2001:db8::7]:51234", Current: true,
			}}}}}},
		{"revoke_sessions",
			&boomerangv1.Request{RequestId: 42, SessionId: session, Body: &boomerangv1.Request_RevokeSessions{RevokeSessions: &boomerangv1.RevokeSessionsRequest{Client: "billing", Handle: "3f2a9c0d81b4e7a6"}}},
			&boomerangv1.Response{RequestId: 42, Body: &boomerangv1.Response_RevokeSessions{RevokeSessions: &boomerangv1.RevokeSessionsResponse{Revoked: 1}}}},
		{"get_client",
			&boomerangv1.Request{RequestId: 43, SessionId: session, Body: &boomerangv1.Request_GetClient{GetClient: &boomerangv1.GetClientRequest{ClientId: "billing"}}},
			&boomerangv1.Response{RequestId: 43, Body: &boomerangv1.Response_GetClient{GetClient: &boomerangv1.GetClientResponse{Client: fullClientConfig()}}}},
		{"update_client",
			&boomerangv1.Request{RequestId: 44, SessionId: session, Body: &boomerangv1.Request_UpdateClient{UpdateClient: &boomerangv1.UpdateClientRequest{
				ClientId: "billing", ClearCallback: true, Retry: retryPolicy(), DefaultMode: boomerangv1.DispatchMode_DISPATCH_MODE_UNSPECIFIED.Enum(),
				Role: boomerangv1.Role_ROLE_READ_ONLY.Enum(), CallbackRules: &boomerangv1.CallbackRules{},
			}}},
			&boomerangv1.Response{RequestId: 44, Body: &boomerangv1.Response_UpdateClient{UpdateClient: &boomerangv1.UpdateClientResponse{Client: fullClientConfig()}}}},
		{"change_password",
			&boomerangv1.Request{RequestId: 45, SessionId: session, Body: &boomerangv1.Request_ChangePassword{ChangePassword: &boomerangv1.ChangePasswordRequest{
				CurrentPassword: "correct horse battery staple", NewPassword: "staple battery horse correct",
			}}},
			&boomerangv1.Response{RequestId: 45, Body: &boomerangv1.Response_ChangePassword{ChangePassword: &boomerangv1.ChangePasswordResponse{}}}},
		{"rotate_signing_secret",
			&boomerangv1.Request{RequestId: 46, SessionId: session, Body: &boomerangv1.Request_RotateSigningSecret{RotateSigningSecret: &boomerangv1.RotateSigningSecretRequest{
				ClientId: "billing", SigningSecret: secretBytes(), OverlapMs: proto.Int64(0),
			}}},
			&boomerangv1.Response{RequestId: 46, Body: &boomerangv1.Response_RotateSigningSecret{RotateSigningSecret: &boomerangv1.RotateSigningSecretResponse{
				Client: fullClientConfig(), SigningSecret: secretBytes(),
			}}}},
		{"register_tasks",
			&boomerangv1.Request{RequestId: 50, SessionId: session, Body: &boomerangv1.Request_RegisterTasks{RegisterTasks: &boomerangv1.RegisterTasksRequest{
				Client: "billing",
				Tasks: []*boomerangv1.RegisterTaskRequest{
					{Payload: payload, When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 90000}, Group: group, IdempotencyKey: "invoice-42"},
					{Payload: []byte("x"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: -1}},
					{},
				},
			}}},
			&boomerangv1.Response{RequestId: 50, Body: &boomerangv1.Response_RegisterTasks{RegisterTasks: &boomerangv1.RegisterTasksResponse{Results: []*boomerangv1.RegisterTaskResult{
				{Result: &boomerangv1.RegisterTaskResult_Registered{Registered: &boomerangv1.RegisterTaskResponse{Task: batchTask(taskID, group, "invoice-42"), Created: false}}},
				{Result: &boomerangv1.RegisterTaskResult_Error{Error: server.ErrorOf(&scheduler.FieldError{Field: "delay", Rule: "must be between 0 and 315360000000 (87600h0m0s), got -1"})}},
				{Result: &boomerangv1.RegisterTaskResult_Registered{Registered: &boomerangv1.RegisterTaskResponse{Task: plainTask(maxID), Created: true}}},
			}}}}},
	}
	return append(ops, panelOperations()...)
}

// panelOperations are the operations behind the web panel.
func panelOperations() []op {
	blocked := &boomerangv1.Group{Client: "billing", Group: group, Tasks: 12, Blocked: true, BlockedDeadLetterId: bigID, BlockedSinceMs: dueMs + 9000}
	attempt := &boomerangv1.Attempt{Attempt: 2, FireAtMs: dueMs, StartedMs: dueMs + 1500, DurationMs: 12.75, Error: "delivery: HTTP 503 Service Unavailable",
		Protocol: boomerangv1.Protocol_PROTOCOL_HTTP}
	running := &boomerangv1.Attempt{Attempt: 3, FireAtMs: dueMs, StartedMs: dueMs + 4500, Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Running: true}
	pct := &boomerangv1.Percentiles{Count: 40, P50Ms: 1.5, P90Ms: 7.25, P99Ms: 30, MaxMs: 41.125}
	return []op{
		{"list_groups",
			&boomerangv1.Request{RequestId: 60, SessionId: session, Body: &boomerangv1.Request_ListGroups{ListGroups: &boomerangv1.ListGroupsRequest{
				Client: "billing", BlockedOnly: true, GroupContains: "Zür", Limit: 50,
			}}},
			&boomerangv1.Response{RequestId: 60, Body: &boomerangv1.Response_ListGroups{ListGroups: &boomerangv1.ListGroupsResponse{
				Groups: []*boomerangv1.GroupSummary{{Group: blocked, Blocking: deadLetter()}}, Truncated: true,
			}}}},
		{"get_stats",
			&boomerangv1.Request{RequestId: 61, SessionId: session, Body: &boomerangv1.Request_GetStats{GetStats: &boomerangv1.GetStatsRequest{SinceMs: dueMs - 3600000}}},
			&boomerangv1.Response{RequestId: 61, Body: &boomerangv1.Response_GetStats{GetStats: &boomerangv1.GetStatsResponse{IntervalMs: 10000, Samples: []*boomerangv1.StatsSample{{
				AtMs: dueMs, Registered: 1000, Attempts: 900, Delivered: 880, Failed: 20, DeadLettered: 3, DeadLetters: 3, BlockedGroups: 1,
				Delivering: 4, Waiting: 2, Wheel: 96,
				ByProtocol: []*boomerangv1.ProtocolCount{{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Delivered: 870, Failed: 20}, {Protocol: boomerangv1.Protocol_PROTOCOL_UDP, Delivered: 10}},
				FireLag:    pct, AttemptDuration: pct,
			}}}}}},
		{"get_due_histogram",
			&boomerangv1.Request{RequestId: 62, SessionId: session, Body: &boomerangv1.Request_GetDueHistogram{GetDueHistogram: &boomerangv1.GetDueHistogramRequest{FromMs: dueMs, BucketMs: 60000, Buckets: 2}}},
			&boomerangv1.Response{RequestId: 62, Body: &boomerangv1.Response_GetDueHistogram{GetDueHistogram: &boomerangv1.GetDueHistogramResponse{
				FromMs: dueMs, BucketMs: 60000, Buckets: 2, Shards: 2, Counts: []uint64{0, 5, maxID, 1}, Overdue: 7, Truncated: true,
			}}}},
		{"get_task_attempts",
			&boomerangv1.Request{RequestId: 63, SessionId: session, Body: &boomerangv1.Request_GetTaskAttempts{GetTaskAttempts: &boomerangv1.GetTaskAttemptsRequest{Id: taskID}}},
			&boomerangv1.Response{RequestId: 63, Body: &boomerangv1.Response_GetTaskAttempts{GetTaskAttempts: &boomerangv1.GetTaskAttemptsResponse{
				Attempts: []*boomerangv1.Attempt{attempt, running},
			}}}},
		{"list_completed",
			&boomerangv1.Request{RequestId: 64, SessionId: session, Body: &boomerangv1.Request_ListCompleted{ListCompleted: &boomerangv1.ListCompletedRequest{
				Client: "billing", Group: group, TaskId: taskID, FailedOnly: true, PageToken: bigID, PageSize: 20,
			}}},
			&boomerangv1.Response{RequestId: 64, Body: &boomerangv1.Response_ListCompleted{ListCompleted: &boomerangv1.ListCompletedResponse{
				Tasks: []*boomerangv1.CompletedTask{{Task: plainTask(taskID), DeadLetterId: bigID, Error: "delivery: HTTP 503 Service Unavailable",
					FinishedMs: dueMs + 5000, Attempts: []*boomerangv1.Attempt{attempt}, Seq: 9}},
				NextPageToken: 9,
			}}}},
		{"list_audit_log",
			&boomerangv1.Request{RequestId: 65, SessionId: session, Body: &boomerangv1.Request_ListAuditLog{ListAuditLog: &boomerangv1.ListAuditLogRequest{Limit: 10, BeforeId: 100}}},
			&boomerangv1.Response{RequestId: 65, Body: &boomerangv1.Response_ListAuditLog{ListAuditLog: &boomerangv1.ListAuditLogResponse{Entries: []*boomerangv1.AuditEntry{{
				Id: 99, AtMs: dueMs, Actor: "admin", Action: "UnblockGroup", Client: "billing", Target: "group " + group,
				Detail: "", Status: boomerangv1.Status_STATUS_OK,
			}}}}}},
		{"bulk_dead_letters",
			&boomerangv1.Request{RequestId: 66, SessionId: session, Body: &boomerangv1.Request_BulkDeadLetters{BulkDeadLetters: &boomerangv1.BulkDeadLettersRequest{
				Action: boomerangv1.BulkAction_BULK_ACTION_REPLAY, Client: "billing", Group: group, FailedBeforeMs: dueMs, ErrorContains: "HTTP 503",
				PayloadContains: payload, AfterId: bigID, Limit: 100,
			}}},
			&boomerangv1.Response{RequestId: 66, Body: &boomerangv1.Response_BulkDeadLetters{BulkDeadLetters: &boomerangv1.BulkDeadLettersResponse{
				Matched: 100, Done: 99, Skipped: 1, LastId: maxID, More: true, LastError: "task is being delivered",
			}}}},
		{"get_cluster",
			&boomerangv1.Request{RequestId: 67, SessionId: session, Body: &boomerangv1.Request_GetCluster{GetCluster: &boomerangv1.GetClusterRequest{}}},
			&boomerangv1.Response{RequestId: 67, Body: &boomerangv1.Response_GetCluster{GetCluster: &boomerangv1.GetClusterResponse{
				Name: "prod", MapRevision: 4242,
				Nodes: []*boomerangv1.ClusterNode{
					{Id: "1", TcpAddress: "10.0.0.1:7070", HttpAddress: "10.0.0.1:7071", RaftAddress: "10.0.0.1:7072", Zone: "a", Live: true, Healthy: true, Health: "member",
						StartedMs: createMs, Version: "1.0.0"},
					{Id: "2", TcpAddress: "10.0.0.2:7070", HttpAddress: "10.0.0.2:7071", RaftAddress: "10.0.0.2:7072", Zone: "b", Mark: "draining", Health: "gone: its membership lease lapsed"},
				},
				Shards: []*boomerangv1.ClusterShard{
					{Shard: 0, Leader: "1", PreferredLeader: "2", Replicas: []string{"1", "2", "3"}},
					{Shard: 63, Leader: "2", PreferredLeader: "2", Replicas: []string{"1", "2", "3"}, Partition: 1},
				},
			}}}},
		{"change_cluster",
			&boomerangv1.Request{RequestId: 80, SessionId: session, Body: &boomerangv1.Request_ChangeCluster{ChangeCluster: &boomerangv1.ChangeClusterRequest{
				Change: &boomerangv1.ChangeClusterRequest_Move{Move: &boomerangv1.ShardMove{Shard: 12, From: "1", To: "4"}},
			}}},
			&boomerangv1.Response{RequestId: 80, Body: &boomerangv1.Response_ChangeCluster{ChangeCluster: &boomerangv1.ChangeClusterResponse{MapRevision: 4243}}}},
		{"get_routes",
			&boomerangv1.Request{RequestId: 81, SessionId: session, Body: &boomerangv1.Request_GetRoutes{GetRoutes: &boomerangv1.GetRoutesRequest{}}},
			&boomerangv1.Response{RequestId: 81, Body: &boomerangv1.Response_GetRoutes{GetRoutes: &boomerangv1.GetRoutesResponse{
				Shards: 4, Revision: 4242, Node: "1", Client: "billing",
				Nodes:   []*boomerangv1.RouteNode{{Id: "1", TcpAddress: "10.0.0.1:7070"}, {Id: "2", TcpAddress: "10.0.0.2:7070"}},
				Leaders: []string{"1", "2", "", "2"},
			}}}},
		{"list_pools",
			&boomerangv1.Request{RequestId: 68, SessionId: session, Body: &boomerangv1.Request_ListPools{ListPools: &boomerangv1.ListPoolsRequest{}}},
			&boomerangv1.Response{RequestId: 68, Body: &boomerangv1.Response_ListPools{ListPools: &boomerangv1.ListPoolsResponse{Pools: []*boomerangv1.PoolInfo{
				{Name: "", MaxConcurrent: 256, InUse: 3, Queued: 0},
				{Name: "webhooks", MaxConcurrent: 16, InUse: 16, Queued: 40, MaxPerSecond: 50.5, Rejected: 2},
			}}}}},
	}
}

// batchTask is a task as a RegisterTasks result gives it: without its
// payload.
func batchTask(id uint64, group, key string) *boomerangv1.Task {
	t := plainTask(id)
	t.Group, t.IdempotencyKey, t.Seq = group, key, id
	return t
}

// fullClientConfig has the fields clientConfig leaves out set too.
func fullClientConfig() *boomerangv1.ClientConfig {
	c := clientConfig()
	c.Role = boomerangv1.Role_ROLE_CLIENT
	c.CallbackRules = &boomerangv1.CallbackRules{Allow: []string{"*.billing.example", "10.1.0.0/16"}, Deny: []string{"169.254.169.254"}}
	c.PreviousSecretExpiresMs = dueMs + 86400000
	return c
}

// extraRequests exercise what the per-operation set leaves out.
func extraRequests() []op {
	return []op{
		{name: "register_task/fire_at_repeat", req: &boomerangv1.Request{RequestId: maxID, SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
			Payload: []byte("tick"), When: &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: dueMs}, RepeatIntervalMs: 60000,
			Mode: boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE,
		}}}},
		{name: "register_task/now_empty", req: &boomerangv1.Request{RequestId: bigID, SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{}}}},
		{name: "register_task/negative_delay", req: &boomerangv1.Request{RequestId: 19, SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
			Payload: []byte("x"), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: -1},
		}}}},
		{name: "update_task/delay_only", req: &boomerangv1.Request{RequestId: 20, SessionId: session, Body: &boomerangv1.Request_UpdateTask{UpdateTask: &boomerangv1.UpdateTaskRequest{
			Id: taskID, When: &boomerangv1.UpdateTaskRequest_DelayMs{DelayMs: 0},
		}}}},
		{name: "list_tasks/recurring_true", req: &boomerangv1.Request{RequestId: 21, SessionId: session, Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{Recurring: proto.Bool(true)}}}},
		{name: "list_tasks/search_due_order", req: &boomerangv1.Request{RequestId: 22, SessionId: session, Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{
			PayloadContains: payload, Shard: proto.Uint32(0), Order: boomerangv1.TaskOrder_TASK_ORDER_DUE, PageToken: bigID, PageDueMs: dueMs,
		}}}},
		{name: "list_dead_letters/filtered", req: &boomerangv1.Request{RequestId: 23, SessionId: session, Body: &boomerangv1.Request_ListDeadLetters{ListDeadLetters: &boomerangv1.ListDeadLettersRequest{
			Group: group, FailedBeforeMs: dueMs, ErrorContains: "HTTP 5", PayloadContains: payload,
		}}}},
		{name: "register_task/cron", req: &boomerangv1.Request{RequestId: 24, SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
			Payload: []byte("report"), Cron: "0 9 * * MON-FRI", TimeZone: "Europe/Zurich",
		}}}},
		{name: "register_task/debounce", req: &boomerangv1.Request{RequestId: 25, SessionId: session, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
			Payload: []byte("reindex"), Group: group, ReplaceKey: "reindex", DebounceMs: 30000, MaxWaitMs: 300000,
		}}}},
		{name: "update_task/cron", req: &boomerangv1.Request{RequestId: 26, SessionId: session, Body: &boomerangv1.Request_UpdateTask{UpdateTask: &boomerangv1.UpdateTaskRequest{
			Id: taskID, Cron: proto.String("*/10 * * * * *"), TimeZone: "Australia/Lord_Howe",
		}}}},
		{name: "register_task/route", req: &boomerangv1.Request{RequestId: 28, SessionId: session, Route: true, Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{
			Payload: payload, Group: group,
		}}}},
		{name: "update_client/group_rates", req: &boomerangv1.Request{RequestId: 27, SessionId: session, Body: &boomerangv1.Request_UpdateClient{UpdateClient: &boomerangv1.UpdateClientRequest{
			ClientId: "billing", GroupRateLimit: &boomerangv1.RateLimit{MaxDeliveries: 10, IntervalMs: 1000},
			GroupRateLimits: map[string]*boomerangv1.RateLimit{group: {MaxDeliveries: 1, IntervalMs: 60000}},
		}}}},
	}
}

// extraResponses carry what the per-operation set leaves out: a cron
// task's schedule and next occurrences, a replaced task, a group's and a
// client's rate limits.
func extraResponses() []op {
	cronTask := task()
	cronTask.RepeatIntervalMs, cronTask.Cron, cronTask.TimeZone = 0, "0 9 * * MON-FRI", "Europe/Zurich"
	cronTask.NextFireAtMs = []int64{dueMs + 86400000, dueMs + 3*86400000}
	replaced := plainTask(taskID)
	replaced.ReplaceKey = "reindex"
	rated := clientConfig()
	rated.GroupRateLimit = &boomerangv1.RateLimit{MaxDeliveries: 10, IntervalMs: 1000}
	rated.GroupRateLimits = map[string]*boomerangv1.RateLimit{group: {MaxDeliveries: 1, IntervalMs: 60000}}
	return []op{
		{name: "get_task/cron", resp: &boomerangv1.Response{RequestId: 24, Body: &boomerangv1.Response_GetTask{GetTask: &boomerangv1.GetTaskResponse{Task: cronTask}}}},
		{name: "register_task/replaced", resp: &boomerangv1.Response{RequestId: 25, Body: &boomerangv1.Response_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskResponse{Task: replaced, Replaced: true}}}},
		{name: "get_group/rate_limit", resp: &boomerangv1.Response{RequestId: 26, Body: &boomerangv1.Response_GetGroup{GetGroup: &boomerangv1.GetGroupResponse{Group: &boomerangv1.Group{
			Client: "billing", Group: group, Tasks: 3, RateLimit: &boomerangv1.RateLimit{MaxDeliveries: 1, IntervalMs: 60000},
		}}}}},
		{name: "update_client/group_rates", resp: &boomerangv1.Response{RequestId: 27, Body: &boomerangv1.Response_UpdateClient{UpdateClient: &boomerangv1.UpdateClientResponse{Client: rated}}}},
	}
}

// errorResponses come from the server's own error table, one per
// status; the connection error has request id 0.
func errorResponses() []op {
	fail := func(id uint64, err error) *boomerangv1.Response {
		return &boomerangv1.Response{RequestId: id, Error: server.ErrorOf(err)}
	}
	return []op{
		{name: "error/invalid_request", resp: fail(19, &scheduler.FieldError{Field: "delay", Rule: "must be between 0 and 315360000000 (87600h0m0s), got -1"})},
		{name: "error/unauthorized", resp: fail(1, auth.ErrInvalidCredentials)},
		{name: "error/session_expired", resp: fail(9, auth.ErrSessionExpired)},
		{name: "error/not_found", resp: fail(9, scheduler.ErrNotFound)},
		{name: "error/busy", resp: fail(6, scheduler.ErrBusy)},
		{name: "error/group_full", resp: fail(6, scheduler.ErrGroupFull)},
		{name: "error/conflict", resp: fail(8, scheduler.ErrInFlight)},
		{name: "error/internal", resp: fail(6, store.ErrFailed)},
		{name: "error/not_leader", resp: fail(28, &server.NotLeaderError{Shard: 12, Leader: cluster.NodeInfo{ID: 2, TCP: "10.0.0.2:7070"}, Revision: 4242})},
		{name: "error/connection", resp: fail(0, fmt.Errorf("%w: frame of 2000000 bytes exceeds the limit of 1114112", server.ErrFrame))},
	}
}

// secretBytes is a signing secret with every kind of byte.
func secretBytes() []byte {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i * 37)
	}
	return b
}

type envelopes struct {
	Format    int             `json:"format"`
	Comment   string          `json:"comment"`
	Requests  []messageVector `json:"requests"`
	Responses []messageVector `json:"responses"`
}

func envelopesFile(t *testing.T) envelopes {
	f := envelopes{Format: formatVersion, Comment: "boomerang.v1.Request and Response envelopes of the raw TCP protocol: one request and one response per operation, in service order, then extra requests, extra responses and one error response per status. See README.md."}
	for _, o := range operations() {
		f.Requests = append(f.Requests, newMessageVector(t, o.name, o.req))
		f.Responses = append(f.Responses, newMessageVector(t, o.name, o.resp))
	}
	for _, o := range extraRequests() {
		f.Requests = append(f.Requests, newMessageVector(t, o.name, o.req))
	}
	for _, o := range extraResponses() {
		f.Responses = append(f.Responses, newMessageVector(t, o.name, o.resp))
	}
	for _, o := range errorResponses() {
		f.Responses = append(f.Responses, newMessageVector(t, o.name, o.resp))
	}
	return f
}

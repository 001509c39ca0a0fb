package e2e

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// registerClient registers id with a webhook to url and quick retries.
func registerClient(t *testing.T, admin *client.Client, id, url string, mode boomerangv1.DispatchMode) {
	t.Helper()
	resp, err := admin.RegisterClient(testContext(t), &boomerangv1.RegisterClientRequest{
		ClientId: id, Password: id + "-password",
		Callback:    &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: url, TimeoutMs: 5000},
		Retry:       &boomerangv1.RetryPolicy{Backoff: boomerangv1.Backoff_BACKOFF_FIXED, InitialIntervalMs: 10, MaxIntervalMs: 10, MaxAttempts: 2},
		DefaultMode: mode,
	})
	if err != nil {
		t.Fatalf("RegisterClient %s: %v", id, err)
	}
	if resp.GetClient().GetId() != id || len(resp.GetSigningSecret()) == 0 {
		t.Fatalf("RegisterClient %s returned %v", id, resp)
	}
}

// Every operation of the service through the SDK against the real binary.
func TestSDKOperations(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	ctx := testContext(t)
	admin := s.admin(t)
	if !admin.Session().Admin {
		t.Fatal("the bootstrap admin's session is not an admin's")
	}
	info, err := admin.GetServerInfo(ctx, &boomerangv1.GetServerInfoRequest{})
	if err != nil || info.GetTcpAddress() == "" || info.GetMaxPayloadBytes() == 0 || info.GetMaxFrameBytes() <= info.GetMaxPayloadBytes() {
		t.Fatalf("GetServerInfo: %v, %v", info, err)
	}

	okRecv, badRecv := startReceiver(t, false), startReceiver(t, true)
	registerClient(t, admin, "alice", okRecv.url(), 0)
	registerClient(t, admin, "bob", badRecv.url(), boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR)
	clients, err := admin.ListClients(ctx, &boomerangv1.ListClientsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range clients.GetClients() {
		ids = append(ids, c.GetId())
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"admin", "alice", "bob"}) {
		t.Fatalf("ListClients = %v", ids)
	}

	alice, bob := s.dial(t, "alice", "alice-password"), s.dial(t, "bob", "bob-password")
	t.Run("deliver now", func(t *testing.T) { deliverNow(t, alice, okRecv) })
	t.Run("task lifecycle", func(t *testing.T) { taskLifecycle(t, alice) })
	t.Run("dead letters", func(t *testing.T) { deadLetters(t, bob, badRecv) })
	t.Run("blocked group", func(t *testing.T) { blockedGroup(t, bob, badRecv) })
	t.Run("visibility", func(t *testing.T) { visibility(t, admin, alice, bob) })

	// A refreshed session replaces the old one.
	old := alice.Session().ID
	ref, err := alice.RefreshSession(ctx, &boomerangv1.RefreshSessionRequest{})
	if err != nil || ref.GetSessionId() == old || alice.Session().ID != ref.GetSessionId() {
		t.Fatalf("RefreshSession: %v, %v (old %s)", ref, err, old)
	}
	if _, err := alice.ListTasks(ctx, &boomerangv1.ListTasksRequest{}); err != nil {
		t.Fatalf("ListTasks on the refreshed session: %v", err)
	}

	// Deregistering: refused while the client has tasks, then allowed;
	// the client's sessions end with it.
	if _, err := alice.Schedule(ctx, []byte("keeps alice"), client.After(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DeregisterClient(ctx, &boomerangv1.DeregisterClientRequest{ClientId: "alice"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("DeregisterClient with tasks left: %v, want CONFLICT", err)
	}
	for task, err := range alice.Tasks(ctx, &boomerangv1.ListTasksRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := alice.Cancel(ctx, task.GetId()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.DeregisterClient(ctx, &boomerangv1.DeregisterClientRequest{ClientId: "alice"}); err != nil {
		t.Fatalf("DeregisterClient: %v", err)
	}
	if _, err := alice.ListTasks(ctx, &boomerangv1.ListTasksRequest{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("a deregistered client's call: %v, want UNAUTHORIZED", err)
	}
	if _, err := admin.DeregisterClient(ctx, &boomerangv1.DeregisterClientRequest{ClientId: "alice"}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deregistering twice: %v, want NOT_FOUND", err)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("SIGTERM: boomerang exited with %v, want 0", err)
	}
}

func deliverNow(t *testing.T, c *client.Client, r *receiver) {
	ctx := testContext(t)
	task, err := c.Schedule(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	d := r.next(t)
	if d.payload != "hello" || d.taskID != strconv.FormatUint(task.GetId(), 10) || d.attempt != "1" {
		t.Fatalf("delivery %+v for task %d", d, task.GetId())
	}
	waitFor(t, "the delivered one-shot task to be deleted", func() bool {
		_, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: task.GetId()})
		return errors.Is(err, client.ErrNotFound)
	})
}

func taskLifecycle(t *testing.T, c *client.Client) {
	ctx := testContext(t)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	first, err := c.RegisterTask(ctx, &boomerangv1.RegisterTaskRequest{
		Payload: []byte("later"), When: &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: at.UnixMilli()},
		Group: "g1", IdempotencyKey: "k1",
	})
	if err != nil || !first.GetCreated() {
		t.Fatalf("RegisterTask: %v, %v", first, err)
	}
	again, err := c.RegisterTask(ctx, &boomerangv1.RegisterTaskRequest{Payload: []byte("other"), IdempotencyKey: "k1", Group: "g1"})
	if err != nil || again.GetCreated() || again.GetTask().GetId() != first.GetTask().GetId() {
		t.Fatalf("repeated idempotency key: %v, %v", again, err)
	}
	id := first.GetTask().GetId()
	got, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	tk := got.GetTask()
	if string(tk.GetPayload()) != "later" || tk.GetFireAtMs() != at.UnixMilli() || tk.GetGroup() != "g1" ||
		tk.GetClient() != "alice" || tk.GetStatus() != boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED || tk.GetIdempotencyKey() != "k1" {
		t.Fatalf("GetTask = %v", tk)
	}
	interval := int64(300_000)
	up, err := c.UpdateTask(ctx, &boomerangv1.UpdateTaskRequest{
		Id: id, Payload: []byte("later2"), When: &boomerangv1.UpdateTaskRequest_DelayMs{DelayMs: 7_200_000}, RepeatIntervalMs: &interval,
	})
	if err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	if tk := up.GetTask(); string(tk.GetPayload()) != "later2" || tk.GetRepeatIntervalMs() != interval || tk.GetFireAtMs() < at.Add(50*time.Minute).UnixMilli() {
		t.Fatalf("UpdateTask = %v", tk)
	}
	yes := true
	for _, q := range []*boomerangv1.ListTasksRequest{{Group: "g1"}, {Recurring: &yes}, {Status: boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED}, {}} {
		list, err := c.ListTasks(ctx, q)
		if err != nil || len(list.GetTasks()) != 1 || list.GetTasks()[0].GetId() != id {
			t.Fatalf("ListTasks(%v) = %v, %v", q, list, err)
		}
	}
	no := false
	if list, err := c.ListTasks(ctx, &boomerangv1.ListTasksRequest{Recurring: &no}); err != nil || len(list.GetTasks()) != 0 {
		t.Fatalf("ListTasks(one-shot) = %v, %v", list, err)
	}
	if err := c.Cancel(ctx, id); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if _, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GetTask after cancel: %v", err)
	}
	if err := c.Cancel(ctx, id); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("second cancel: %v", err)
	}
	// Paging: more tasks than a page.
	for i := range 25 {
		if _, err := c.Schedule(ctx, []byte{byte(i)}, client.After(time.Hour), client.InGroup("paged")); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for task, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{Group: "paged", PageSize: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Cancel(ctx, task.GetId()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 25 {
		t.Fatalf("paged through %d tasks, want 25", n)
	}
}

// awaitDeadLetter waits for a dead letter of the client whose task has
// payload.
func awaitDeadLetter(t *testing.T, c *client.Client, payload string) *boomerangv1.DeadLetter {
	t.Helper()
	ctx := testContext(t)
	var found *boomerangv1.DeadLetter
	waitFor(t, "dead letter "+payload, func() bool {
		for d, err := range c.DeadLetters(ctx, &boomerangv1.ListDeadLettersRequest{}) {
			if err != nil {
				t.Fatal(err)
			}
			if string(d.GetTask().GetPayload()) == payload {
				found = d
				return true
			}
		}
		return false
	})
	return found
}

func deadLetters(t *testing.T, c *client.Client, r *receiver) {
	ctx := testContext(t)
	if _, err := c.Schedule(ctx, []byte("doomed")); err != nil {
		t.Fatal(err)
	}
	d := awaitDeadLetter(t, c, "doomed")
	if d.GetAttempts() != 2 || d.GetLastError() == "" || d.GetBlocksGroup() {
		t.Fatalf("dead letter %v", d)
	}
	got, err := c.GetDeadLetter(ctx, &boomerangv1.GetDeadLetterRequest{Id: d.GetId()})
	if err != nil || got.GetDeadLetter().GetId() != d.GetId() {
		t.Fatalf("GetDeadLetter: %v, %v", got, err)
	}
	// Replay with the endpoint healed: delivered once more.
	r.fail.Store(false)
	defer r.fail.Store(true)
	drain(r)
	rep, err := c.ReplayDeadLetter(ctx, &boomerangv1.ReplayDeadLetterRequest{Id: d.GetId()})
	if err != nil || string(rep.GetTask().GetPayload()) != "doomed" {
		t.Fatalf("ReplayDeadLetter: %v, %v", rep, err)
	}
	if del := r.next(t); del.payload != "doomed" {
		t.Fatalf("replayed delivery %+v", del)
	}
	r.fail.Store(true)
	if _, err := c.Schedule(ctx, []byte("doomed again")); err != nil {
		t.Fatal(err)
	}
	d = awaitDeadLetter(t, c, "doomed again")
	if _, err := c.DeleteDeadLetter(ctx, &boomerangv1.DeleteDeadLetterRequest{Id: d.GetId()}); err != nil {
		t.Fatalf("DeleteDeadLetter: %v", err)
	}
	if _, err := c.GetDeadLetter(ctx, &boomerangv1.GetDeadLetterRequest{Id: d.GetId()}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GetDeadLetter after delete: %v", err)
	}
	if _, err := c.DeleteDeadLetter(ctx, &boomerangv1.DeleteDeadLetterRequest{Id: d.GetId()}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("second DeleteDeadLetter: %v", err)
	}
}

func drain(r *receiver) {
	for {
		select {
		case <-r.got:
		default:
			return
		}
	}
}

func blockedGroup(t *testing.T, c *client.Client, r *receiver) {
	ctx := testContext(t)
	block := client.WithMode(boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR)
	if _, err := c.Schedule(ctx, []byte("head"), client.InGroup("gb"), block); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "group gb to block", func() bool {
		g, err := c.GetGroup(ctx, &boomerangv1.GetGroupRequest{Group: "gb"})
		return err == nil && g.GetGroup().GetBlocked()
	})
	if _, err := c.Schedule(ctx, []byte("behind"), client.InGroup("gb"), block); err != nil {
		t.Fatal(err)
	}
	// Skip: the head stays dead-lettered; "behind" runs and fails too.
	if _, err := c.SkipGroup(ctx, &boomerangv1.SkipGroupRequest{Group: "gb"}); err != nil {
		t.Fatalf("SkipGroup: %v", err)
	}
	awaitDeadLetter(t, c, "behind")
	waitFor(t, "group gb to block on behind", func() bool {
		g, err := c.GetGroup(ctx, &boomerangv1.GetGroupRequest{Group: "gb"})
		return err == nil && g.GetGroup().GetBlocked()
	})
	// Unblock with the endpoint healed: "behind" is delivered again.
	r.fail.Store(false)
	defer r.fail.Store(true)
	drain(r)
	un, err := c.UnblockGroup(ctx, &boomerangv1.UnblockGroupRequest{Group: "gb"})
	if err != nil || string(un.GetTask().GetPayload()) != "behind" {
		t.Fatalf("UnblockGroup: %v, %v", un, err)
	}
	if d := r.next(t); d.payload != "behind" {
		t.Fatalf("after unblock, delivered %+v", d)
	}
	waitFor(t, "group gb to be unblocked", func() bool {
		g, err := c.GetGroup(ctx, &boomerangv1.GetGroupRequest{Group: "gb"})
		return (err == nil && !g.GetGroup().GetBlocked()) || errors.Is(err, client.ErrNotFound)
	})
	if _, err := c.SkipGroup(ctx, &boomerangv1.SkipGroupRequest{Group: "gb"}); err == nil {
		t.Fatal("SkipGroup on a group that is not blocked succeeded")
	}
}

func visibility(t *testing.T, admin, alice, bob *client.Client) {
	ctx := testContext(t)
	task, err := bob.Schedule(ctx, []byte("bob's"), client.After(time.Hour), client.InGroup("private"))
	if err != nil {
		t.Fatal(err)
	}
	id := task.GetId()
	if _, err := alice.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("alice GetTask(bob's): %v, want NOT_FOUND", err)
	}
	if err := alice.Cancel(ctx, id); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("alice CancelTask(bob's): %v, want NOT_FOUND", err)
	}
	if _, err := alice.UpdateTask(ctx, &boomerangv1.UpdateTaskRequest{Id: id, Payload: []byte("x")}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("alice UpdateTask(bob's): %v, want NOT_FOUND", err)
	}
	if _, err := alice.ListTasks(ctx, &boomerangv1.ListTasksRequest{Client: "bob"}); err == nil {
		t.Fatal("alice listed bob's tasks")
	}
	if _, err := alice.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{ClientId: "mallory", Password: "mallory-pw"}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("alice RegisterClient: %v, want UNAUTHORIZED", err)
	}
	if _, err := alice.ListClients(ctx, &boomerangv1.ListClientsRequest{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("alice ListClients: %v, want UNAUTHORIZED", err)
	}
	if got, err := admin.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); err != nil || got.GetTask().GetClient() != "bob" {
		t.Fatalf("admin GetTask(bob's): %v, %v", got, err)
	}
	list, err := admin.ListTasks(ctx, &boomerangv1.ListTasksRequest{Client: "bob", Group: "private"})
	if err != nil || len(list.GetTasks()) != 1 {
		t.Fatalf("admin ListTasks(bob): %v, %v", list, err)
	}
	if err := admin.Cancel(ctx, id); err != nil {
		t.Fatalf("admin cancels bob's task: %v", err)
	}
}

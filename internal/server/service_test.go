package server

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

var ctx = context.Background()

func delay(ms int64) *boomerangv1.RegisterTaskRequest_DelayMs {
	return &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: ms}
}

func TestRegisterTaskValidation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.MaxPayloadBytes = 100 << 10 })
	ts.addClients(t)
	udp := &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_UDP, Endpoint: "127.0.0.1:9"}
	for _, tc := range []struct {
		name  string
		req   *boomerangv1.RegisterTaskRequest
		field string
	}{
		{"payload", &boomerangv1.RegisterTaskRequest{Payload: make([]byte, 100<<10+1)}, "payload"},
		{"negative delay", &boomerangv1.RegisterTaskRequest{When: delay(-1)}, "delay_ms"},
		{"delay too far", &boomerangv1.RegisterTaskRequest{When: delay(scheduler.MaxDelay.Milliseconds() + 1)}, "delay_ms"},
		{"fire at zero", &boomerangv1.RegisterTaskRequest{When: &boomerangv1.RegisterTaskRequest_FireAtMs{}}, "fire_at_ms"},
		{"fire at too far", &boomerangv1.RegisterTaskRequest{When: &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: epoch.Add(scheduler.MaxDelay + time.Hour).UnixMilli()}}, "fire_at_ms"},
		{"interval", &boomerangv1.RegisterTaskRequest{RepeatIntervalMs: -5}, "repeat_interval_ms"},
		{"group NUL", &boomerangv1.RegisterTaskRequest{Group: "a\x00b"}, "group"},
		{"group long", &boomerangv1.RegisterTaskRequest{Group: strings.Repeat("g", 257)}, "group"},
		{"idempotency key", &boomerangv1.RegisterTaskRequest{IdempotencyKey: strings.Repeat("k", 257)}, "idempotency_key"},
		{"idempotency key UTF-8", &boomerangv1.RegisterTaskRequest{IdempotencyKey: "\xc8\xff"}, "idempotency_key"},
		{"group UTF-8", &boomerangv1.RegisterTaskRequest{Group: "\xff"}, "group"},
		{"callback pool UTF-8", &boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{Pool: "\xff"}}, "callback.pool"},
		{"mode", &boomerangv1.RegisterTaskRequest{Mode: 9}, "mode"},
		{"retry backoff", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Backoff: 7}}, "retry.backoff"},
		{"retry jitter", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Jitter: 1.5}}, "retry.jitter"},
		{"retry NaN jitter", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Jitter: math.NaN()}}, "retry.jitter"},
		{"retry multiplier", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Multiplier: 0.5}}, "retry.multiplier"},
		{"retry NaN multiplier", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Multiplier: math.NaN()}}, "retry.multiplier"},
		{"retry intervals", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{InitialIntervalMs: 10, MaxIntervalMs: 5}}, "retry.max_interval_ms"},
		{"retry attempts", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{MaxAttempts: 1001}}, "retry.max_attempts"},
		{"callback protocol", &boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{Protocol: 9, Endpoint: "x:1"}}, "callback.protocol"},
		{"callback endpoint", &boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{Endpoint: "ftp://x"}}, "callback.endpoint"},
		{"callback timeout", &boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{TimeoutMs: -1}}, "callback.timeout_ms"},
		// Huge values must not overflow into small durations.
		{"callback timeout overflow", &boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{TimeoutMs: 9223372036854776}}, "callback.timeout_ms"},
		{"retry interval overflow", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{InitialIntervalMs: 9223372036854776}}, "retry.initial_interval_ms"},
		{"retry max interval overflow", &boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{MaxIntervalMs: math.MaxInt64}}, "retry.max_interval_ms"},
		{"delay overflow", &boomerangv1.RegisterTaskRequest{When: delay(9223372036854776)}, "delay_ms"},
		{"interval overflow", &boomerangv1.RegisterTaskRequest{RepeatIntervalMs: 9223372036854776}, "repeat_interval_ms"},
		{"interval below the minimum", &boomerangv1.RegisterTaskRequest{RepeatIntervalMs: 1}, "repeat_interval_ms"},
		{"udp payload", &boomerangv1.RegisterTaskRequest{Callback: udp, Payload: make([]byte, delivery.MaxUDPPayload+1)}, "payload"},
		{"cron", &boomerangv1.RegisterTaskRequest{Cron: "0 9 * * FUNDAY"}, "cron"},
		{"cron and interval", &boomerangv1.RegisterTaskRequest{Cron: "0 9 * * *", RepeatIntervalMs: 60000}, "cron"},
		{"time zone", &boomerangv1.RegisterTaskRequest{Cron: "0 9 * * *", TimeZone: "Europe/Atlantis"}, "time_zone"},
		{"time zone without cron", &boomerangv1.RegisterTaskRequest{TimeZone: "Europe/Zurich"}, "time_zone"},
		{"replace key NUL", &boomerangv1.RegisterTaskRequest{ReplaceKey: "a\x00b"}, "replace_key"},
		{"replace key with idempotency key", &boomerangv1.RegisterTaskRequest{ReplaceKey: "r", IdempotencyKey: "i"}, "replace_key"},
		{"debounce without replace key", &boomerangv1.RegisterTaskRequest{DebounceMs: 1000}, "debounce_ms"},
		{"debounce with a delay", &boomerangv1.RegisterTaskRequest{ReplaceKey: "r", DebounceMs: 1000, When: delay(5)}, "debounce_ms"},
		{"negative debounce", &boomerangv1.RegisterTaskRequest{ReplaceKey: "r", DebounceMs: -1}, "debounce_ms"},
		{"max wait overflow", &boomerangv1.RegisterTaskRequest{ReplaceKey: "r", DebounceMs: 1, MaxWaitMs: math.MaxInt64}, "max_wait_ms"},
	} {
		_, err := ts.svc.RegisterTask(ctx, alice, tc.req)
		e := ErrorOf(err)
		if e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field != tc.field || !strings.HasPrefix(e.Message, "invalid "+tc.field+": ") {
			t.Errorf("%s: %v → %v", tc.name, err, e)
		}
	}
	if resp, _ := ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{}); len(resp.Tasks) != 0 {
		t.Fatalf("invalid registrations were stored: %v", resp.Tasks)
	}
	// A past due time is allowed: the task is due at once.
	task := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{When: &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: 1}})
	if task.FireAtMs != 1 {
		t.Fatalf("past due time stored as %d", task.FireAtMs)
	}
}

func TestOtherRequestValidation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	check := func(name string, err error, field string) {
		t.Helper()
		if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field != field {
			t.Errorf("%s: %v → %v", name, err, e)
		}
	}
	_, err := ts.svc.UpdateTask(ctx, alice, &boomerangv1.UpdateTaskRequest{Id: 5})
	check("update nothing", err, "body")
	_, err = ts.svc.UpdateTask(ctx, alice, &boomerangv1.UpdateTaskRequest{Payload: []byte("x")})
	check("update id", err, "id")
	neg := int64(-1)
	_, err = ts.svc.UpdateTask(ctx, alice, &boomerangv1.UpdateTaskRequest{Id: 5, RepeatIntervalMs: &neg})
	check("update interval", err, "repeat_interval_ms")
	_, err = ts.svc.CancelTask(ctx, alice, &boomerangv1.CancelTaskRequest{})
	check("cancel id", err, "id")
	_, err = ts.svc.GetTask(ctx, alice, &boomerangv1.GetTaskRequest{})
	check("get id", err, "id")
	_, err = ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{PageSize: 1001})
	check("page size", err, "page_size")
	_, err = ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{Status: boomerangv1.TaskStatus_TASK_STATUS_QUEUED})
	check("list status", err, "status")
	_, err = ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{DueFromMs: 10, DueToMs: 10})
	check("due range", err, "due_to_ms")
	_, err = ts.svc.ListDeadLetters(ctx, alice, &boomerangv1.ListDeadLettersRequest{PageSize: 5000})
	check("dead letter page size", err, "page_size")
	_, err = ts.svc.GetDeadLetter(ctx, alice, &boomerangv1.GetDeadLetterRequest{})
	check("dead letter id", err, "id")
	_, err = ts.svc.GetGroup(ctx, alice, &boomerangv1.GetGroupRequest{})
	check("group", err, "group")
	_, err = ts.svc.UnblockGroup(ctx, admin, &boomerangv1.UnblockGroupRequest{Client: "a\x00", Group: "g"})
	check("group client", err, "client")

	for _, tc := range []struct {
		req   *boomerangv1.RegisterClientRequest
		field string
	}{
		{&boomerangv1.RegisterClientRequest{ClientId: "has space", Password: "password"}, "client_id"},
		{&boomerangv1.RegisterClientRequest{ClientId: "c", Password: "short"}, "password"},
		{&boomerangv1.RegisterClientRequest{ClientId: "c", Password: "password", DefaultMode: 7}, "default_mode"},
		{&boomerangv1.RegisterClientRequest{ClientId: "c", Password: "password", Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_TCP, Endpoint: "nohost"}}, "callback.endpoint"},
		{&boomerangv1.RegisterClientRequest{ClientId: "c", Password: "password", Retry: &boomerangv1.RetryPolicy{Jitter: -1}}, "retry.jitter"},
		{&boomerangv1.RegisterClientRequest{ClientId: "c", Password: "password", DeadLetters: &boomerangv1.DeadLetterPolicy{RetentionMs: -1}}, "dead_letters.retention_ms"},
		{&boomerangv1.RegisterClientRequest{ClientId: "c", Password: "password", SigningSecret: []byte("tiny")}, "signing_secret"},
	} {
		_, err := ts.svc.RegisterClient(ctx, admin, tc.req)
		check("register client "+tc.field, err, tc.field)
	}
	_, err = ts.svc.DeregisterClient(ctx, admin, &boomerangv1.DeregisterClientRequest{})
	check("deregister", err, "client_id")
}

func TestDispatchModeDefaults(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	ts.addClient(t, &boomerangv1.RegisterClientRequest{ClientId: "blocker", DefaultMode: boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR})
	blocker := alice
	blocker.Client = "blocker"
	for _, tc := range []struct {
		who  string
		mode boomerangv1.DispatchMode
		want boomerangv1.DispatchMode
	}{
		{"alice", 0, boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR},
		{"alice", boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE, boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE},
		{"blocker", 0, boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR},
		{"blocker", boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR, boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR},
	} {
		p := alice
		if tc.who == "blocker" {
			p = blocker
		}
		if got := ts.register(t, p, &boomerangv1.RegisterTaskRequest{Mode: tc.mode}).Mode; got != tc.want {
			t.Errorf("%s with mode %v: got %v, want %v", tc.who, tc.mode, got, tc.want)
		}
	}
}

// TestOwnership checks that a client sees and changes only its own
// tasks, dead letters and groups, and that the admin sees all.
func TestOwnership(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	task := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "g", When: delay(60_000)})
	bobTask := ts.register(t, bob, &boomerangv1.RegisterTaskRequest{When: delay(60_000)})

	_, err := ts.svc.GetTask(ctx, bob, &boomerangv1.GetTaskRequest{Id: task.Id})
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
	_, err = ts.svc.CancelTask(ctx, bob, &boomerangv1.CancelTaskRequest{Id: task.Id})
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
	_, err = ts.svc.UpdateTask(ctx, bob, &boomerangv1.UpdateTaskRequest{Id: task.Id, Payload: []byte("x")})
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
	_, err = ts.svc.ListTasks(ctx, bob, &boomerangv1.ListTasksRequest{Client: "alice"})
	wantError(t, err, boomerangv1.Status_STATUS_UNAUTHORIZED, "")
	_, err = ts.svc.ListDeadLetters(ctx, bob, &boomerangv1.ListDeadLettersRequest{Client: "alice"})
	wantError(t, err, boomerangv1.Status_STATUS_UNAUTHORIZED, "")
	_, err = ts.svc.GetGroup(ctx, bob, &boomerangv1.GetGroupRequest{Client: "alice", Group: "g"})
	wantError(t, err, boomerangv1.Status_STATUS_UNAUTHORIZED, "")
	_, err = ts.svc.GetGroup(ctx, bob, &boomerangv1.GetGroupRequest{Group: "g"}) // bob's own "g" does not exist
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
	for name, call := range map[string]func() error{
		"RegisterClient": func() error {
			_, err := ts.svc.RegisterClient(ctx, bob, &boomerangv1.RegisterClientRequest{ClientId: "x"})
			return err
		},
		"DeregisterClient": func() error {
			_, err := ts.svc.DeregisterClient(ctx, bob, &boomerangv1.DeregisterClientRequest{ClientId: "alice"})
			return err
		},
		"ListClients": func() error { _, err := ts.svc.ListClients(ctx, bob, &boomerangv1.ListClientsRequest{}); return err },
	} {
		if e := ErrorOf(call()); e.Status != boomerangv1.Status_STATUS_UNAUTHORIZED || e.Message != "only an admin may do this" {
			t.Errorf("%s as bob: %v", name, e)
		}
	}

	mine, err := ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{Client: "alice"})
	if err != nil || len(mine.Tasks) != 1 || mine.Tasks[0].Id != task.Id {
		t.Fatalf("alice's list: %v, %v", mine, err)
	}
	all, err := ts.svc.ListTasks(ctx, admin, &boomerangv1.ListTasksRequest{})
	if err != nil || len(all.Tasks) != 2 {
		t.Fatalf("admin's list: %v, %v", all, err)
	}
	onlyBob, err := ts.svc.ListTasks(ctx, admin, &boomerangv1.ListTasksRequest{Client: "bob"})
	if err != nil || len(onlyBob.Tasks) != 1 || onlyBob.Tasks[0].Id != bobTask.Id {
		t.Fatalf("admin's list of bob: %v, %v", onlyBob, err)
	}
	if _, err := ts.svc.GetTask(ctx, admin, &boomerangv1.GetTaskRequest{Id: task.Id}); err != nil {
		t.Fatalf("admin GetTask: %v", err)
	}
	g, err := ts.svc.GetGroup(ctx, admin, &boomerangv1.GetGroupRequest{Client: "alice", Group: "g"})
	if err != nil || g.Group.Tasks != 1 || g.Group.Blocked {
		t.Fatalf("admin GetGroup: %v, %v", g, err)
	}
	if _, err := ts.svc.CancelTask(ctx, admin, &boomerangv1.CancelTaskRequest{Id: task.Id}); err != nil {
		t.Fatalf("admin cancel: %v", err)
	}
}

// TestDeadLettersAndGroups runs a BLOCK_ON_ERROR group into the dead
// letter queue and out again through the API.
func TestDeadLettersAndGroups(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Retry = scheduler.FixedRetry{Attempts: 1} })
	ts.addClients(t)
	ts.del.setOutcome(func(scheduler.Delivery) (error, bool) { return errRefused, true })
	block := boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
	head := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "g", Mode: block, Payload: []byte("head")})
	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "g", Mode: block, Payload: []byte("next"), When: delay(1)})

	var dl *boomerangv1.DeadLetter
	ts.eventually(t, "the head to be dead-lettered", func() bool {
		resp, err := ts.svc.ListDeadLetters(ctx, alice, &boomerangv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.DeadLetters) > 0 {
			dl = resp.DeadLetters[0]
		}
		return dl != nil
	})
	if dl.Task.Id != head.Id || string(dl.Task.Payload) != "head" || !dl.BlocksGroup || dl.Attempts != 1 || dl.LastError != errRefused.Error() {
		t.Fatalf("dead letter %v", dl)
	}
	g, err := ts.svc.GetGroup(ctx, alice, &boomerangv1.GetGroupRequest{Group: "g"})
	if err != nil || !g.Group.Blocked || g.Group.BlockedDeadLetterId != dl.Id {
		t.Fatalf("group %v, %v", g, err)
	}
	_, err = ts.svc.GetDeadLetter(ctx, bob, &boomerangv1.GetDeadLetterRequest{Id: dl.Id})
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
	if got, err := ts.svc.GetDeadLetter(ctx, alice, &boomerangv1.GetDeadLetterRequest{Id: dl.Id}); err != nil || got.DeadLetter.Id != dl.Id {
		t.Fatalf("GetDeadLetter: %v, %v", got, err)
	}
	if all, err := ts.svc.ListDeadLetters(ctx, admin, &boomerangv1.ListDeadLettersRequest{}); err != nil || len(all.DeadLetters) != 1 {
		t.Fatalf("admin ListDeadLetters: %v, %v", all, err)
	}

	// Let the receiver accept, then skip the blocked head: "next" goes.
	ts.del.setOutcome(nil)
	if _, err := ts.svc.SkipGroup(ctx, alice, &boomerangv1.SkipGroupRequest{Group: "g"}); err != nil {
		t.Fatal(err)
	}
	var a attempt
	ts.eventually(t, "the next task's delivery", func() bool {
		select {
		case a = <-ts.del.attempts:
			return true
		default:
			return false
		}
	})
	if string(a.Task.Payload) != "next" {
		t.Fatalf("delivered %q after skip, want next", a.Task.Payload)
	}
	a.done(nil)
	_, err = ts.svc.SkipGroup(ctx, alice, &boomerangv1.SkipGroupRequest{Group: "g"})
	wantError(t, err, boomerangv1.Status_STATUS_CONFLICT, "")
	_, err = ts.svc.UnblockGroup(ctx, alice, &boomerangv1.UnblockGroupRequest{Group: "g"})
	if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_CONFLICT || e.Message != `group "g" of client "alice": the group is not blocked` {
		t.Fatalf("unblock a group that is not blocked: %v", e)
	}

	// The skipped head is still a dead letter: replay it.
	replayed, err := ts.svc.ReplayDeadLetter(ctx, alice, &boomerangv1.ReplayDeadLetterRequest{Id: dl.Id})
	if err != nil || string(replayed.Task.Payload) != "head" {
		t.Fatalf("replay: %v, %v", replayed, err)
	}
	ts.eventually(t, "the replayed delivery", func() bool {
		select {
		case a = <-ts.del.attempts:
			return true
		default:
			return false
		}
	})
	a.done(nil)
	_, err = ts.svc.DeleteDeadLetter(ctx, alice, &boomerangv1.DeleteDeadLetterRequest{Id: dl.Id})
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
}

func TestClientAdministration(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	secret := bytes.Repeat([]byte("s"), 24)
	resp, err := ts.svc.RegisterClient(ctx, admin, &boomerangv1.RegisterClientRequest{
		ClientId: "alice", Password: "alice-password", Callback: httpCallback, SigningSecret: secret,
		Retry:       &boomerangv1.RetryPolicy{Backoff: boomerangv1.Backoff_BACKOFF_EXPONENTIAL, InitialIntervalMs: 100, MaxAttempts: 3},
		DeadLetters: &boomerangv1.DeadLetterPolicy{MaxEntries: 10, RetentionMs: 1000},
	})
	if err != nil || !bytes.Equal(resp.SigningSecret, secret) || resp.Client.Retry.GetMaxAttempts() != 3 ||
		resp.Client.DeadLetters.GetMaxEntries() != 10 || resp.Client.CreatedMs != epoch.UnixMilli() {
		t.Fatalf("RegisterClient: %v, %v", resp, err)
	}
	_, err = ts.svc.RegisterClient(ctx, admin, &boomerangv1.RegisterClientRequest{ClientId: "alice", Password: "alice-password"})
	wantError(t, err, boomerangv1.Status_STATUS_CONFLICT, "")
	list, err := ts.svc.ListClients(ctx, admin, &boomerangv1.ListClientsRequest{})
	if err != nil || len(list.Clients) != 2 || list.Clients[0].Id != "admin" || !list.Clients[0].Admin || list.Clients[1].Callback.GetEndpoint() != httpCallback.Endpoint {
		t.Fatalf("ListClients: %v, %v", list, err)
	}

	task := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{When: delay(60_000)})
	_, err = ts.svc.DeregisterClient(ctx, admin, &boomerangv1.DeregisterClientRequest{ClientId: "alice"})
	if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_CONFLICT || e.Message != `client "alice" still has 1 task; cancel them first` {
		t.Fatalf("deregister with a task: %v", e)
	}
	_, err = ts.svc.DeregisterClient(ctx, admin, &boomerangv1.DeregisterClientRequest{ClientId: "admin"})
	wantError(t, err, boomerangv1.Status_STATUS_CONFLICT, "")
	if _, err := ts.svc.CancelTask(ctx, alice, &boomerangv1.CancelTaskRequest{Id: task.Id}); err != nil {
		t.Fatal(err)
	}
	login, err := ts.svc.Login(ctx, &boomerangv1.LoginRequest{ClientId: "alice", Password: "alice-password"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.DeregisterClient(ctx, admin, &boomerangv1.DeregisterClientRequest{ClientId: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err = ts.svc.Authenticate(login.SessionId)
	wantError(t, err, boomerangv1.Status_STATUS_UNAUTHORIZED, "")
	_, err = ts.svc.DeregisterClient(ctx, admin, &boomerangv1.DeregisterClientRequest{ClientId: "alice"})
	wantError(t, err, boomerangv1.Status_STATUS_NOT_FOUND, "")
}

// TestListPagesFitTheFrame checks that a page of big tasks is cut short
// to stay under the frame limit, and that paging still returns them all.
func TestListPagesFitTheFrame(t *testing.T) {
	t.Parallel()
	const payload = 16 << 10
	ts := startServer(t, func(c *Config) { c.MaxPayloadBytes, c.MaxFrameBytes = payload, 3*payload })
	ts.addClients(t)
	want := map[uint64]bool{}
	for range 10 {
		want[ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Payload: make([]byte, payload), When: delay(60_000)}).Id] = true
	}
	pages := 0
	for token := uint64(0); ; pages++ {
		resp, err := ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		framed := mustMarshal(t, &boomerangv1.Response{RequestId: math.MaxUint64, Body: &boomerangv1.Response_ListTasks{ListTasks: resp}})
		if len(framed) > 3*payload || len(resp.Tasks) == 0 {
			t.Fatalf("page of %d tasks is %d bytes, limit %d", len(resp.Tasks), len(framed), 3*payload)
		}
		for _, task := range resp.Tasks {
			if !want[task.Id] {
				t.Fatalf("task %d listed twice or unknown", task.Id)
			}
			delete(want, task.Id)
		}
		if token = resp.NextPageToken; token == 0 {
			break
		}
	}
	if len(want) != 0 || pages < 4 {
		t.Fatalf("%d tasks never listed, %d pages", len(want), pages)
	}
}

func TestBootstrapPassword(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.AdminPassword, c.AdminID = "", "root" })
	pw := ts.BootstrapPassword()
	if len(pw) < 20 {
		t.Fatalf("generated password %q", pw)
	}
	login, err := ts.svc.Login(ctx, &boomerangv1.LoginRequest{ClientId: "root", Password: pw})
	if err != nil || !login.Admin {
		t.Fatalf("login with the generated password: %v, %v", login, err)
	}
	ts.restart(t)
	if ts.BootstrapPassword() != "" {
		t.Fatal("a password was generated again on restart")
	}
	if _, err := ts.svc.Login(ctx, &boomerangv1.LoginRequest{ClientId: "root", Password: pw}); err != nil {
		t.Fatalf("login after restart: %v", err)
	}
}

// Limits on what a client holds: a group's tasks (GROUP_FULL), and the
// dead letter policy's retention, which must not overflow.
func TestGroupLimitAndPolicyOverflow(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Limits.GroupTasks = 2 })
	ts.addClients(t)
	for range 2 {
		ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "g", When: delay(60_000)})
	}
	_, err := ts.svc.RegisterTask(ctx, alice, &boomerangv1.RegisterTaskRequest{Group: "g", When: delay(60_000)})
	if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_GROUP_FULL {
		t.Fatalf("a third task in the group: %v", e)
	}
	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "other", When: delay(60_000)})

	_, err = ts.svc.RegisterClient(ctx, admin, &boomerangv1.RegisterClientRequest{
		ClientId: "carol", Password: "carol-password-1",
		DeadLetters: &boomerangv1.DeadLetterPolicy{RetentionMs: 9223372036854776},
	})
	if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field != "dead_letters.retention_ms" {
		t.Fatalf("an overflowing retention: %v", e)
	}
	big, err := ts.svc.RegisterClient(ctx, admin, &boomerangv1.RegisterClientRequest{ClientId: "dave", Password: "dave-password-12", GroupLimit: 3})
	if err != nil || big.Client.GroupLimit != 3 {
		t.Fatalf("a client's own group limit: %v, %v", big, err)
	}
}

// Bulk operations cancel or purge everything matching, except what is
// under way or blocks a group, and count first in a dry run.
func TestBulkCancelAndPurge(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	for i := range 5 {
		ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: fmt.Sprint("g", i%2), When: delay(60_000)})
	}
	ts.register(t, bob, &boomerangv1.RegisterTaskRequest{Group: "g0", When: delay(60_000)})
	dry, err := ts.svc.CancelTasks(ctx, alice, &boomerangv1.CancelTasksRequest{Group: "g0", DryRun: true})
	if err != nil || dry.Matched != 3 || dry.Cancelled != 0 {
		t.Fatalf("dry run: %v, %v", dry, err)
	}
	done, err := ts.svc.CancelTasks(ctx, alice, &boomerangv1.CancelTasksRequest{Group: "g0"})
	if err != nil || done.Matched != 3 || done.Cancelled != 3 {
		t.Fatalf("cancel g0: %v, %v", done, err)
	}
	if _, err := ts.svc.CancelTasks(ctx, alice, &boomerangv1.CancelTasksRequest{Client: "bob"}); err == nil {
		t.Fatal("alice cancelled bob's tasks")
	}
	left, _ := ts.svc.ListTasks(ctx, admin, &boomerangv1.ListTasksRequest{})
	if len(left.Tasks) != 3 {
		t.Fatalf("%d tasks left, want alice's 2 in g1 and bob's", len(left.Tasks))
	}
	all, err := ts.svc.CancelTasks(ctx, alice, &boomerangv1.CancelTasksRequest{})
	if err != nil || all.Cancelled != 2 {
		t.Fatalf("cancel all of alice's: %v, %v", all, err)
	}
	purged, err := ts.svc.PurgeDeadLetters(ctx, alice, &boomerangv1.PurgeDeadLettersRequest{ErrorContains: "x", DryRun: true})
	if err != nil || purged.Matched != 0 {
		t.Fatalf("purge with no dead letters: %v, %v", purged, err)
	}
}

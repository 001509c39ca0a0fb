package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

func registerTasksReq(client string, tasks ...*boomerangv1.RegisterTaskRequest) *boomerangv1.Request {
	return &boomerangv1.Request{Body: &boomerangv1.Request_RegisterTasks{RegisterTasks: &boomerangv1.RegisterTasksRequest{Tasks: tasks, Client: client}}}
}

// mixedBatch holds good tasks between ones RegisterTask refuses, each for
// another reason; bad[i] is true for those.
func mixedBatch() (tasks []*boomerangv1.RegisterTaskRequest, bad []bool) {
	add := func(r *boomerangv1.RegisterTaskRequest, isBad bool) {
		tasks, bad = append(tasks, r), append(bad, isBad)
	}
	add(&boomerangv1.RegisterTaskRequest{Payload: []byte("first"), When: delay(60_000), Group: "g"}, false)
	add(&boomerangv1.RegisterTaskRequest{Payload: []byte("x"), When: delay(-1)}, true)
	add(&boomerangv1.RegisterTaskRequest{Payload: []byte("second"), When: delay(60_000), Group: "g", IdempotencyKey: "k"}, false)
	add(&boomerangv1.RegisterTaskRequest{Group: "a\x00b"}, true)
	add(&boomerangv1.RegisterTaskRequest{Callback: &boomerangv1.Callback{Endpoint: "ftp://x"}}, true)
	add(&boomerangv1.RegisterTaskRequest{Retry: &boomerangv1.RetryPolicy{Jitter: 2}}, true)
	add(&boomerangv1.RegisterTaskRequest{Payload: []byte("third"), When: delay(60_000)}, false)
	return tasks, bad
}

// Each task of a batch gets what RegisterTask would have answered: the
// same error for the bad ones, a stored task for the good ones, in the
// order of the request, on raw TCP.
func TestRegisterTasksOverTCP(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")
	tasks, bad := mixedBatch()
	resp := okResponse(t, c.call(registerTasksReq("", tasks...))).GetRegisterTasks()
	if len(resp.Results) != len(tasks) {
		t.Fatalf("%d results for %d tasks", len(resp.Results), len(tasks))
	}
	for i, res := range resp.Results {
		if bad[i] {
			single := c.call(registerReq(tasks[i]))
			if res.GetError() == nil || !proto.Equal(res.GetError(), single.Error) {
				t.Errorf("task %d: batch answered %v, RegisterTask %v", i, res, single.Error)
			}
			continue
		}
		reg := res.GetRegistered()
		if reg == nil || !reg.Created || reg.Task.Client != "alice" || reg.Task.Id == 0 || len(reg.Task.Payload) != 0 {
			t.Fatalf("task %d: %v", i, res)
		}
		stored := okResponse(t, c.call(getReq(reg.Task.Id))).GetGetTask().Task
		if string(stored.Payload) != string(tasks[i].Payload) || stored.Group != tasks[i].Group || stored.FireAtMs != epoch.Add(60e9).UnixMilli() {
			t.Errorf("task %d stored as %v", i, stored)
		}
	}
	// Tasks of one group keep the order of the request.
	first, second := resp.Results[0].GetRegistered().Task, resp.Results[2].GetRegistered().Task
	if first.Seq >= second.Seq {
		t.Errorf("group order: seq %d then %d", first.Seq, second.Seq)
	}
	// The idempotency key matches within and across requests.
	again := okResponse(t, c.call(registerTasksReq("", tasks[2], tasks[2]))).GetRegisterTasks()
	for _, res := range again.Results {
		if r := res.GetRegistered(); r == nil || r.Created || r.Task.Id != second.Id {
			t.Errorf("repeated key: %v, want task %d not created", res, second.Id)
		}
	}
	empty := okResponse(t, c.call(registerTasksReq(""))).GetRegisterTasks()
	if len(empty.Results) != 0 {
		t.Errorf("an empty batch: %v", empty)
	}
}

// A batch over the limit fails as a whole, and registers nothing.
func TestRegisterTasksTooMany(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")
	tasks := make([]*boomerangv1.RegisterTaskRequest, scheduler.MaxRegisterBatch+1)
	for i := range tasks {
		tasks[i] = &boomerangv1.RegisterTaskRequest{When: delay(60_000)}
	}
	resp := c.call(registerTasksReq("", tasks...))
	if resp.Error.GetStatus() != boomerangv1.Status_STATUS_INVALID_REQUEST || resp.Error.GetField() != "tasks" || resp.Body != nil {
		t.Fatalf("%d tasks: %v", len(tasks), resp.Error)
	}
	list := okResponse(t, c.call(&boomerangv1.Request{Body: &boomerangv1.Request_ListTasks{ListTasks: &boomerangv1.ListTasksRequest{}}}))
	if n := len(list.GetListTasks().Tasks); n != 0 {
		t.Fatalf("%d tasks registered by a refused batch", n)
	}
	// The most a batch may hold goes through.
	resp = okResponse(t, c.call(registerTasksReq("", tasks[1:]...)))
	for i, res := range resp.GetRegisterTasks().Results {
		if res.GetRegistered() == nil {
			t.Fatalf("task %d of %d: %v", i, len(tasks)-1, res)
		}
	}
}

// A full group refuses the tasks beyond its limit, each alone, as
// RegisterTask does.
func TestRegisterTasksGroupFull(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Limits.GroupTasks = 2 })
	ts.addClients(t)
	var tasks []*boomerangv1.RegisterTaskRequest
	for i := range 4 {
		tasks = append(tasks, &boomerangv1.RegisterTaskRequest{Group: "g", When: delay(60_000), Payload: fmt.Appendf(nil, "%d", i)})
	}
	tasks = append(tasks, &boomerangv1.RegisterTaskRequest{Group: "other", When: delay(60_000)})
	resp, err := ts.svc.RegisterTasks(ctx, alice, &boomerangv1.RegisterTasksRequest{Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	_, single := ts.svc.RegisterTask(ctx, alice, tasks[0])
	var statuses []string
	for _, res := range resp.Results {
		if e := res.GetError(); e != nil {
			if !proto.Equal(e, ErrorOf(single)) {
				t.Errorf("batch: %v, RegisterTask: %v", e, ErrorOf(single))
			}
			statuses = append(statuses, statusLabel(e.Status))
			continue
		}
		statuses = append(statuses, "OK")
	}
	if got := strings.Join(statuses, " "); got != "OK OK GROUP_FULL GROUP_FULL OK" {
		t.Fatalf("results %s", got)
	}
}

// Who may register whose tasks: a client its own, an admin any client's
// by naming it; a read-only client nothing. These fail the whole request.
func TestRegisterTasksAuthorization(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	ts.addClient(t, &boomerangv1.RegisterClientRequest{ClientId: "reader", Role: boomerangv1.Role_ROLE_READ_ONLY})
	task := &boomerangv1.RegisterTaskRequest{Payload: []byte("p"), When: delay(60_000)}

	admin := dialTCP(t, ts.TCPAddr())
	admin.login("admin", adminPassword)
	resp := okResponse(t, admin.call(registerTasksReq("bob", task))).GetRegisterTasks()
	if r := resp.Results[0].GetRegistered(); r == nil || r.Task.Client != "bob" {
		t.Fatalf("admin for bob: %v", resp)
	}
	bob := dialTCP(t, ts.TCPAddr())
	bob.login("bob", "bob-password")
	if got := okResponse(t, bob.call(getReq(resp.Results[0].GetRegistered().Task.Id))).GetGetTask().Task; string(got.Payload) != "p" {
		t.Fatalf("bob's task registered by the admin: %v", got)
	}

	alice := dialTCP(t, ts.TCPAddr())
	alice.login("alice", "alice-password")
	reader := dialTCP(t, ts.TCPAddr())
	reader.login("reader", "reader-password")
	anonymous := dialTCP(t, ts.TCPAddr())
	for _, tc := range []struct {
		name   string
		c      *tcpClient
		client string
		status boomerangv1.Status
	}{
		{"alice for bob", alice, "bob", boomerangv1.Status_STATUS_UNAUTHORIZED},
		{"read-only", reader, "", boomerangv1.Status_STATUS_UNAUTHORIZED},
		{"no session", anonymous, "", boomerangv1.Status_STATUS_UNAUTHORIZED},
		{"admin for nobody", admin, "nobody", boomerangv1.Status_STATUS_NOT_FOUND},
		{"bad client name", admin, "a\x00", boomerangv1.Status_STATUS_INVALID_REQUEST},
	} {
		if resp := tc.c.call(registerTasksReq(tc.client, task)); resp.Error.GetStatus() != tc.status || resp.Body != nil {
			t.Errorf("%s: %v, want %v", tc.name, resp.Error, tc.status)
		}
	}
	// alice naming herself is as good as naming nobody.
	if r := okResponse(t, alice.call(registerTasksReq("alice", task))).GetRegisterTasks().Results[0].GetRegistered(); r == nil || r.Task.Client != "alice" {
		t.Fatalf("alice for herself: %v", r)
	}
}

// The same operation over Connect, gRPC and gRPC-Web, with the
// request's and each task's errors as details.
func TestRegisterTasksOverConnect(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	tasks, bad := mixedBatch()
	for name, c := range connectClients(t, ts.HTTPAddr()) {
		t.Run(name, func(t *testing.T) {
			login, err := c.Login(ctx, connect.NewRequest(&boomerangv1.LoginRequest{ClientId: "alice", Password: "alice-password"}))
			if err != nil {
				t.Fatal(err)
			}
			session := login.Msg.SessionId
			resp, err := c.RegisterTasks(ctx, withSession(&boomerangv1.RegisterTasksRequest{Tasks: tasks}, session))
			if err != nil {
				t.Fatal(err)
			}
			for i, res := range resp.Msg.Results {
				_, single := ts.svc.RegisterTask(ctx, alice, tasks[i])
				switch {
				case bad[i] && !proto.Equal(res.GetError(), ErrorOf(single)):
					t.Errorf("task %d: %v, want %v", i, res, ErrorOf(single))
				case !bad[i] && (res.GetRegistered() == nil || !res.GetRegistered().Created && tasks[i].IdempotencyKey == ""):
					t.Errorf("task %d: %v", i, res)
				}
			}
			_, err = c.RegisterTasks(ctx, withSession(&boomerangv1.RegisterTasksRequest{Tasks: tasks, Client: "bob"}, session))
			if code, e := wireError(t, err); code != connect.CodeUnauthenticated || e.Status != boomerangv1.Status_STATUS_UNAUTHORIZED {
				t.Errorf("alice for bob: %v %v", code, e)
			}
		})
	}
}

// Requests count once by operation; their tasks count by their own
// status.
func TestRegisterTasksMetrics(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	defer http.DefaultClient.CloseIdleConnections()
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")
	tasks, _ := mixedBatch()
	okResponse(t, c.call(registerTasksReq("", tasks...)))
	wants := []string{
		`boomerang_requests_total{operation="RegisterTasks",status="OK"} 1`,
		`boomerang_request_duration_seconds_count{operation="RegisterTasks"} 1`,
		`boomerang_batch_tasks_total{status="OK"} 3`,
		`boomerang_batch_tasks_total{status="INVALID_REQUEST"} 4`,
		"boomerang_tasks_registered_total 3",
	}
	poll(t, "the metrics", func() bool {
		_, body := get(t, "http://"+ts.HTTPAddr()+"/metrics")
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
}

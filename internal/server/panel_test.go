package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

// failingGroup makes alice's group g blocked by a dead-lettered head
// holding one task behind it, and returns the head's dead letter id.
func failingGroup(t *testing.T, ts *testServer) uint64 {
	t.Helper()
	ts.del.setOutcome(func(d scheduler.Delivery) (error, bool) {
		if d.Task.Group == "g" {
			return errRefused, true
		}
		return nil, true
	})
	block := boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "g", Mode: block, Payload: []byte("head")})
	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "g", Mode: block, Payload: []byte("next"), When: delay(1)})
	var id uint64
	ts.eventually(t, "the group to block", func() bool {
		g, err := ts.svc.GetGroup(ctx, alice, &boomerangv1.GetGroupRequest{Group: "g"})
		if err == nil && g.Group.Blocked {
			id = g.Group.BlockedDeadLetterId
		}
		return id != 0
	})
	return id
}

func TestGroupsHistoryAndCompleted(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Retry = scheduler.FixedRetry{Attempts: 2} })
	ts.addClients(t)
	dl := failingGroup(t, ts)
	ok := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Group: "fine", Payload: []byte("x")})
	ts.register(t, bob, &boomerangv1.RegisterTaskRequest{Group: "bobs", When: delay(3_600_000)})

	groups, err := ts.svc.ListGroups(ctx, admin, &boomerangv1.ListGroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first := groups.Groups[0]
	if first.Group.Group != "g" || !first.Group.Blocked || first.Blocking.GetId() != dl ||
		first.Blocking.LastError != errRefused.Error() || first.Group.Tasks != 1 {
		t.Fatalf("first group %v, want alice's blocked g with its dead letter and the task behind it", first)
	}
	if mine, err := ts.svc.ListGroups(ctx, bob, &boomerangv1.ListGroupsRequest{}); err != nil || len(mine.Groups) != 1 || mine.Groups[0].Group.Group != "bobs" {
		t.Fatalf("bob's groups %v, %v", mine, err)
	}
	if blocked, err := ts.svc.ListGroups(ctx, admin, &boomerangv1.ListGroupsRequest{BlockedOnly: true, Limit: 1}); err != nil || len(blocked.Groups) != 1 || blocked.Truncated {
		t.Fatalf("blocked groups %v, %v", blocked, err)
	}
	_, err = ts.svc.ListGroups(ctx, bob, &boomerangv1.ListGroupsRequest{Client: "alice"})
	wantError(t, err, boomerangv1.Status_STATUS_UNAUTHORIZED, "")

	var done *boomerangv1.ListCompletedResponse
	ts.eventually(t, "both outcomes in the completed list", func() bool {
		done, err = ts.svc.ListCompleted(ctx, alice, &boomerangv1.ListCompletedRequest{})
		return err == nil && len(done.Tasks) == 2
	})
	delivered, failed := done.Tasks[0], done.Tasks[1] // newest first
	if delivered.Task.Id != ok.Id || !delivered.Delivered || len(delivered.Attempts) != 1 || !delivered.Attempts[0].Ok {
		t.Fatalf("delivered %v", delivered)
	}
	if failed.Delivered || failed.DeadLetterId != dl || len(failed.Attempts) != 2 || failed.Attempts[1].Error != errRefused.Error() {
		t.Fatalf("dead-lettered %v, want 2 failed attempts", failed)
	}
	if mine, _ := ts.svc.ListCompleted(ctx, bob, &boomerangv1.ListCompletedRequest{}); len(mine.Tasks) != 0 {
		t.Fatalf("bob sees %v of alice's completed tasks", mine.Tasks)
	}
	page, err := ts.svc.ListCompleted(ctx, admin, &boomerangv1.ListCompletedRequest{PageSize: 1, FailedOnly: true})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].Delivered || page.NextPageToken != 0 {
		t.Fatalf("failed only: %v, %v", page, err)
	}

	attempts, err := ts.svc.GetTaskAttempts(ctx, alice, &boomerangv1.GetTaskAttemptsRequest{Id: failed.Task.Id})
	if err != nil || len(attempts.Attempts) != 2 || attempts.Attempts[0].Attempt != 1 || attempts.Attempts[0].Protocol != boomerangv1.Protocol_PROTOCOL_HTTP {
		t.Fatalf("attempts %v, %v", attempts, err)
	}
	if theirs, _ := ts.svc.GetTaskAttempts(ctx, bob, &boomerangv1.GetTaskAttemptsRequest{Id: failed.Task.Id}); len(theirs.Attempts) != 0 {
		t.Fatalf("bob sees alice's attempts %v", theirs)
	}

	// The window ends: the history forgets.
	ts.clock.Advance(DefaultCompletedWindow + time.Minute)
	ts.samp.take()
	ts.hist.expire()
	if gone, _ := ts.svc.ListCompleted(ctx, admin, &boomerangv1.ListCompletedRequest{}); len(gone.Tasks) != 0 {
		t.Fatalf("completed tasks outlive the window: %v", gone.Tasks)
	}
}

func TestAuditLogRecordsOperatorActions(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Retry = scheduler.FixedRetry{Attempts: 1} })
	ts.addClients(t)
	failingGroup(t, ts)
	client := connectClients(t, ts.HTTPAddr())["connect"]
	login := func(id, pw string) string {
		resp, err := client.Login(ctx, withSession(&boomerangv1.LoginRequest{ClientId: id, Password: pw}, ""))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg.SessionId
	}
	adminSession, bobSession := login("admin", adminPassword), login("bob", "bob-password")
	if _, err := client.UnblockGroup(ctx, withSession(&boomerangv1.UnblockGroupRequest{Client: "alice", Group: "g"}, adminSession)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SkipGroup(ctx, withSession(&boomerangv1.SkipGroupRequest{Group: "nope"}, bobSession)); err == nil {
		t.Fatal("skipping a group that does not exist worked")
	}
	_, _ = client.CancelTasks(ctx, withSession(&boomerangv1.CancelTasksRequest{DryRun: true}, bobSession))

	log, err := client.ListAuditLog(ctx, withSession(&boomerangv1.ListAuditLogRequest{}, adminSession))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(log.Msg.Entries); n != 2 {
		t.Fatalf("audit log %v, want 2 entries (the dry run is not one)", log.Msg.Entries)
	}
	skip, unblock := log.Msg.Entries[0], log.Msg.Entries[1]
	if unblock.Actor != "admin" || unblock.Action != "UnblockGroup" || unblock.Client != "alice" || unblock.Target != "group g" ||
		unblock.Status != boomerangv1.Status_STATUS_OK || unblock.AtMs != ts.clock.Now().UnixMilli() {
		t.Fatalf("unblock entry %v", unblock)
	}
	if skip.Actor != "bob" || skip.Status != boomerangv1.Status_STATUS_CONFLICT {
		t.Fatalf("failed skip entry %v", skip)
	}
	mine, err := client.ListAuditLog(ctx, withSession(&boomerangv1.ListAuditLogRequest{}, bobSession))
	if err != nil || len(mine.Msg.Entries) != 1 || mine.Msg.Entries[0].Id != skip.Id {
		t.Fatalf("bob's audit log %v, %v: want only his own action", mine, err)
	}
	older, err := client.ListAuditLog(ctx, withSession(&boomerangv1.ListAuditLogRequest{BeforeId: skip.Id, Limit: 1}, adminSession))
	if err != nil || len(older.Msg.Entries) != 1 || older.Msg.Entries[0].Id != unblock.Id {
		t.Fatalf("page before %d: %v, %v", skip.Id, older, err)
	}

	// The raw TCP transport records too.
	tc := dialTCP(t, ts.TCPAddr())
	session := tc.login("admin", adminPassword).SessionId
	okResponse(t, tc.call(&boomerangv1.Request{SessionId: session, Body: &boomerangv1.Request_CancelTasks{
		CancelTasks: &boomerangv1.CancelTasksRequest{Client: "bob"}}}))
	if last := ts.svc.panel.audit.list(0, 1, func(*boomerangv1.AuditEntry) bool { return true }); last[0].Action != "CancelTasks" || last[0].Client != "bob" {
		t.Fatalf("last entry %v, want the TCP CancelTasks", last)
	}
}

func TestSearchTasks(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	var ids []uint64
	for i := range 12 {
		task := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{
			Payload: fmt.Appendf(nil, `{"order": %d, "kind": "%s"}`, i, map[bool]string{true: "even", false: "odd"}[i%2 == 0]),
			When:    delay(int64(100_000 - i*1000)), // later registrations are due sooner
		})
		ids = append(ids, task.Id)
	}
	ts.register(t, bob, &boomerangv1.RegisterTaskRequest{Payload: []byte(`{"kind": "even"}`), When: delay(1)})

	even, err := ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{PayloadContains: []byte(`"even"`)})
	if err != nil || len(even.Tasks) != 6 {
		t.Fatalf("payload search: %d tasks, %v; want alice's 6 even ones", len(even.Tasks), err)
	}

	// Due order, 5 a page: the last registered comes first.
	var got []uint64
	req := &boomerangv1.ListTasksRequest{Order: boomerangv1.TaskOrder_TASK_ORDER_DUE, PageSize: 5}
	for {
		page, err := ts.svc.ListTasks(ctx, alice, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page.Tasks {
			got = append(got, task.Id)
		}
		if page.NextPageToken == 0 {
			break
		}
		req.PageToken, req.PageDueMs = page.NextPageToken, page.NextPageDueMs
	}
	if len(got) != len(ids) {
		t.Fatalf("due order listed %d tasks, want %d", len(got), len(ids))
	}
	for i, id := range got {
		if id != ids[len(ids)-1-i] {
			t.Fatalf("due order %v, want the reverse of %v", got, ids)
		}
	}

	shard := uint32(store.ShardOf(ids[0]))
	one, err := ts.svc.ListTasks(ctx, admin, &boomerangv1.ListTasksRequest{Shard: &shard})
	if err != nil || len(one.Tasks) == 0 {
		t.Fatalf("shard %d: %v, %v", shard, one, err)
	}
	for _, task := range one.Tasks {
		if uint32(store.ShardOf(task.Id)) != shard {
			t.Fatalf("task %d is not in shard %d", task.Id, shard)
		}
	}
	bad := uint32(ts.st.Shards())
	_, err = ts.svc.ListTasks(ctx, admin, &boomerangv1.ListTasksRequest{Shard: &bad})
	wantError(t, err, boomerangv1.Status_STATUS_INVALID_REQUEST, "shard")

	h, err := ts.svc.GetDueHistogram(ctx, admin, &boomerangv1.GetDueHistogramRequest{BucketMs: 10_000, Buckets: 12})
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, n := range h.Counts {
		total += n
	}
	if total+h.Overdue != 13 || len(h.Counts) != ts.st.Shards()*12 || h.Truncated {
		t.Fatalf("heat map counts %d and %d overdue, want 13 runs", total, h.Overdue)
	}
	_, err = ts.svc.GetDueHistogram(ctx, alice, &boomerangv1.GetDueHistogramRequest{})
	wantError(t, err, boomerangv1.Status_STATUS_UNAUTHORIZED, "")
}

func TestBulkDeadLetters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Retry = scheduler.FixedRetry{Attempts: 1} })
	ts.addClients(t)
	ts.del.setOutcome(func(scheduler.Delivery) (error, bool) { return errRefused, true })
	for i := range 7 {
		ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Payload: fmt.Appendf(nil, "job %d", i)})
	}
	ts.register(t, bob, &boomerangv1.RegisterTaskRequest{Payload: []byte("job bob")})
	ts.eventually(t, "8 dead letters", func() bool {
		all, err := ts.svc.ListDeadLetters(ctx, admin, &boomerangv1.ListDeadLettersRequest{})
		return err == nil && len(all.DeadLetters) == 8
	})
	found, err := ts.svc.ListDeadLetters(ctx, alice, &boomerangv1.ListDeadLettersRequest{PayloadContains: []byte("job 3")})
	if err != nil || len(found.DeadLetters) != 1 {
		t.Fatalf("search: %v, %v", found, err)
	}
	filter := func(r *boomerangv1.BulkDeadLettersRequest) *boomerangv1.BulkDeadLettersRequest {
		r.Client, r.ErrorContains, r.Action = "alice", "refused", boomerangv1.BulkAction_BULK_ACTION_REPLAY
		return r
	}
	dry, err := ts.svc.BulkDeadLetters(ctx, admin, filter(&boomerangv1.BulkDeadLettersRequest{DryRun: true}))
	if err != nil || dry.Matched != 7 || dry.Done != 0 || dry.More {
		t.Fatalf("dry run %v, %v", dry, err)
	}

	// Replay 3 at a time; the receiver now accepts.
	ts.del.setOutcome(func(scheduler.Delivery) (error, bool) { return nil, true })
	var replayed uint64
	req := filter(&boomerangv1.BulkDeadLettersRequest{Limit: 3})
	for calls := 1; ; calls++ {
		resp, err := ts.svc.BulkDeadLetters(ctx, admin, req)
		if err != nil || resp.Skipped != 0 || resp.Done > 3 {
			t.Fatalf("call %d: %v, %v", calls, resp, err)
		}
		replayed += resp.Done
		if !resp.More {
			break
		}
		req.AfterId = resp.LastId
	}
	if replayed != 7 {
		t.Fatalf("replayed %d, want 7", replayed)
	}
	left, _ := ts.svc.ListDeadLetters(ctx, admin, &boomerangv1.ListDeadLettersRequest{})
	if len(left.DeadLetters) != 1 || left.DeadLetters[0].Task.Client != "bob" {
		t.Fatalf("left %v, want bob's only", left.DeadLetters)
	}
	del, err := ts.svc.BulkDeadLetters(ctx, bob, &boomerangv1.BulkDeadLettersRequest{Action: boomerangv1.BulkAction_BULK_ACTION_DELETE})
	if err != nil || del.Done != 1 {
		t.Fatalf("delete: %v, %v", del, err)
	}
	_, err = ts.svc.BulkDeadLetters(ctx, bob, &boomerangv1.BulkDeadLettersRequest{})
	wantError(t, err, boomerangv1.Status_STATUS_INVALID_REQUEST, "action")
}

func TestBulkDeleteSkipsBlockedHeads(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Retry = scheduler.FixedRetry{Attempts: 1} })
	ts.addClients(t)
	dl := failingGroup(t, ts)
	resp, err := ts.svc.BulkDeadLetters(ctx, alice, &boomerangv1.BulkDeadLettersRequest{Action: boomerangv1.BulkAction_BULK_ACTION_DELETE})
	if err != nil || resp.Matched != 1 || resp.Skipped != 1 || resp.LastError == "" {
		t.Fatalf("delete: %v, %v", resp, err)
	}
	if _, err := ts.svc.GetDeadLetter(ctx, alice, &boomerangv1.GetDeadLetterRequest{Id: dl}); err != nil {
		t.Fatalf("the blocked head is gone: %v", err)
	}
}

func TestStatsClusterAndPools(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.Panel.StatsInterval = time.Second })
	ts.addClients(t)
	ts.del.setOutcome(func(scheduler.Delivery) (error, bool) { return nil, true })
	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{})
	ts.eventually(t, "a sample with the delivery", func() bool {
		stats, err := ts.svc.GetStats(ctx, admin, &boomerangv1.GetStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		last := stats.Samples[len(stats.Samples)-1]
		return last.Delivered == 1 && len(last.ByProtocol) == 1 && last.ByProtocol[0].Delivered == 1 && last.Registered == 1
	})
	_, err := ts.svc.GetStats(ctx, alice, &boomerangv1.GetStatsRequest{})
	if !errors.Is(err, ErrAdminOnly) {
		t.Fatalf("a client reads the stats: %v", err)
	}
	cl, err := ts.svc.GetCluster(ctx, admin, &boomerangv1.GetClusterRequest{})
	if err != nil || !cl.Standalone || len(cl.Nodes) != 1 || !cl.Nodes[0].Healthy || len(cl.Shards) != ts.st.Shards() || cl.Shards[3].Partition != 1 {
		t.Fatalf("cluster %v, %v", cl, err)
	}
	// This test server runs a test deliverer, so no dispatch pools.
	if pools, err := ts.svc.ListPools(ctx, admin, &boomerangv1.ListPoolsRequest{}); err != nil || len(pools.Pools) != 0 {
		t.Fatalf("pools %v, %v", pools, err)
	}
	info, _ := ts.svc.GetServerInfo(ctx, alice, &boomerangv1.GetServerInfoRequest{})
	if info.UiPath != DefaultUIPath || info.MinRefreshMs != DefaultMinRefresh.Milliseconds() || info.CompletedWindowMs != DefaultCompletedWindow.Milliseconds() {
		t.Fatalf("server info %v", info)
	}
}

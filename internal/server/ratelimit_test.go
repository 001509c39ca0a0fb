package server

import (
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// A client's rate limits: set when it registers and by an update, shown
// by GetClient and GetGroup, and kept by the scheduler.
func TestGroupRateLimits(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClient(t, &boomerangv1.RegisterClientRequest{
		ClientId: "alice", Callback: httpCallback,
		GroupRateLimit:  &boomerangv1.RateLimit{MaxDeliveries: 100, IntervalMs: 1000},
		GroupRateLimits: map[string]*boomerangv1.RateLimit{"slow": {MaxDeliveries: 1, IntervalMs: 10_000}},
	})
	c, err := ts.svc.GetClient(ctx, admin, &boomerangv1.GetClientRequest{ClientId: "alice"})
	if err != nil || c.Client.GroupRateLimit.GetMaxDeliveries() != 100 || c.Client.GroupRateLimits["slow"].GetIntervalMs() != 10_000 {
		t.Fatalf("client: %v, %v", c, err)
	}
	one := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Payload: []byte("1"), Group: "slow"})
	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Payload: []byte("2"), Group: "slow"})
	g, err := ts.svc.GetGroup(ctx, alice, &boomerangv1.GetGroupRequest{Group: "slow"})
	if err != nil || g.Group.RateLimit.GetMaxDeliveries() != 1 || g.Group.RateLimit.GetIntervalMs() != 10_000 {
		t.Fatalf("group: %v, %v", g, err)
	}
	first := <-ts.del.attempts
	first.done(nil)
	// Once the first is gone, the loop has looked at the group again.
	poll(t, "the first task's outcome", func() bool {
		_, err := ts.svc.GetTask(ctx, alice, &boomerangv1.GetTaskRequest{Id: one.Id})
		return ErrorOf(err).GetStatus() == boomerangv1.Status_STATUS_NOT_FOUND
	})
	select {
	case a := <-ts.del.attempts:
		t.Fatalf("task %s delivered within the rate limit's interval", a.Task.Payload)
	default:
	}
	ts.clock.Advance(10 * time.Second)
	second := <-ts.del.attempts
	if string(second.Task.Payload) != "2" {
		t.Fatalf("delivered %q, want the group's second task", second.Task.Payload)
	}
	second.done(nil)

	up, err := ts.svc.UpdateClient(ctx, admin, &boomerangv1.UpdateClientRequest{
		ClientId:        "alice",
		GroupRateLimit:  &boomerangv1.RateLimit{},
		GroupRateLimits: map[string]*boomerangv1.RateLimit{"slow": {}, "fast": {MaxDeliveries: 5, IntervalMs: 1}},
	})
	if err != nil || up.Client.GroupRateLimit != nil || len(up.Client.GroupRateLimits) != 1 || up.Client.GroupRateLimits["fast"].GetMaxDeliveries() != 5 {
		t.Fatalf("update: %v, %v", up, err)
	}
	for _, tc := range []struct {
		req   *boomerangv1.UpdateClientRequest
		field string
	}{
		{&boomerangv1.UpdateClientRequest{ClientId: "alice", GroupRateLimit: &boomerangv1.RateLimit{MaxDeliveries: 1}}, "group_rate_limit.interval_ms"},
		{&boomerangv1.UpdateClientRequest{ClientId: "alice", GroupRateLimit: &boomerangv1.RateLimit{MaxDeliveries: 1001, IntervalMs: 1}}, "group_rate_limit.max_deliveries"},
		{&boomerangv1.UpdateClientRequest{ClientId: "alice", GroupRateLimits: map[string]*boomerangv1.RateLimit{"": {MaxDeliveries: 1, IntervalMs: 1}}}, "group_rate_limits"},
	} {
		_, err := ts.svc.UpdateClient(ctx, admin, tc.req)
		wantError(t, err, boomerangv1.Status_STATUS_INVALID_REQUEST, tc.field)
	}
}

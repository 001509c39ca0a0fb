package server

import (
	"testing"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// A routed request refused for another node's shard is answered
// NOT_LEADER with the node, or without one while the shard changes
// leaders; Connect clients see it as UNAVAILABLE.
func TestRouteNotLeaderAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want *boomerangv1.Error
	}{
		{"a known leader", about(&NotLeaderError{Shard: 7, Leader: cluster.NodeInfo{ID: 2, TCP: "10.0.0.2:7070"}, Revision: 41}, "task 9"),
			&boomerangv1.Error{Status: boomerangv1.Status_STATUS_NOT_LEADER, Message: "node 2 leads shard 7, at 10.0.0.2:7070",
				NotLeader: &boomerangv1.NotLeader{Shard: 7, LeaderId: "2", LeaderTcpAddress: "10.0.0.2:7070", Revision: 41}}},
		{"no leader yet", &NotLeaderError{Shard: 7, Revision: 41},
			&boomerangv1.Error{Status: boomerangv1.Status_STATUS_NOT_LEADER, Message: "shard 7 is changing leaders; ask again",
				NotLeader: &boomerangv1.NotLeader{Shard: 7, Revision: 41}}},
		{"not routed: as before", &scheduler.NotLeaderError{Shard: 7},
			&boomerangv1.Error{Status: boomerangv1.Status_STATUS_BUSY, Message: "the task's shard is changing leaders; retry (the request may or may not have taken effect)"}},
	}
	for _, tt := range tests {
		if got := ErrorOf(tt.err); !proto.Equal(got, tt.want) {
			t.Errorf("%s: ErrorOf = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := ConnectError(&NotLeaderError{Shard: 1}).Code().String(); got != "unavailable" {
		t.Errorf("Connect code %s, want unavailable", got)
	}
}

// Any client may ask a standalone server for the routing view: one node
// leading everything. A standalone server answers routed requests as any
// others.
func TestRouteViewStandalone(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	sess := c.login("alice", "alice-password").GetSessionId()
	view := okResponse(t, c.call(&boomerangv1.Request{SessionId: sess, Body: &boomerangv1.Request_GetRoutes{GetRoutes: &boomerangv1.GetRoutesRequest{}}})).GetGetRoutes()
	if !view.GetStandalone() || view.GetShards() != uint32(ts.st.Shards()) || view.GetClient() != "alice" || len(view.GetLeaders()) != 0 {
		t.Fatalf("routing view %v, want standalone with %d shards for alice", view, ts.st.Shards())
	}
	resp := okResponse(t, c.call(&boomerangv1.Request{SessionId: sess, Route: true, Body: &boomerangv1.Request_RegisterTask{
		RegisterTask: &boomerangv1.RegisterTaskRequest{Group: "g", When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 1000}},
	}}))
	if resp.GetRegisterTask().GetTask().GetId() == 0 {
		t.Fatalf("routed registration: %v", resp)
	}
}

// A NOT_LEADER answer to an operator action is not audited: the leader
// the client turns to audits it.
func TestRouteNotLeaderNotAudited(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	count := func() int {
		return len(ts.svc.panel.audit.list(0, 100, func(*boomerangv1.AuditEntry) bool { return true }))
	}
	before := count()
	req := &boomerangv1.ReplayDeadLetterRequest{Id: 42}
	ts.svc.audited(admin, "ReplayDeadLetter", req, &NotLeaderError{Shard: 0, Leader: cluster.NodeInfo{ID: 2}})
	if got := count(); got != before {
		t.Fatalf("%d audit entries after a NOT_LEADER answer, want %d", got, before)
	}
	ts.svc.audited(admin, "ReplayDeadLetter", req, scheduler.ErrNotFound)
	if got := count(); got != before+1 {
		t.Fatalf("%d audit entries after a refused replay, want %d", got, before+1)
	}
}

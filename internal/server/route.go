package server

import (
	"context"
	"fmt"
	"strconv"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
)

// Routing. A raw TCP request with route set (Request.route) asks the node
// not to forward it: a request for a shard another node leads is answered
// NOT_LEADER with that node's id and raw TCP address and the revision of
// the cluster state the node knows it from, and the client sends it there
// itself. Nothing was done, so the client may always send it again. A
// node that knows no leader for the shard yet (it is changing leaders)
// answers NOT_LEADER without one: the client asks again a little later.
// Only requests for one shard are answered so (those whose operation
// returns a scheduler.NotLeaderError); RegisterTasks splits its batch and
// forwards the tasks of other leaders as always. Connect requests are
// always forwarded.

type routeKey struct{}

// withRoute marks ctx as a request that asked for NOT_LEADER answers.
func withRoute(ctx context.Context, route bool) context.Context {
	if !route {
		return ctx
	}
	return context.WithValue(ctx, routeKey{}, true)
}

func routed(ctx context.Context) bool {
	r, _ := ctx.Value(routeKey{}).(bool)
	return r
}

// NotLeaderError answers a routed request for a shard another node
// leads: Leader (ID 0 while none is known), as this node knows it from
// the cluster state at Revision. ErrorOf makes it NOT_LEADER.
type NotLeaderError struct {
	Shard    uint16
	Leader   cluster.NodeInfo
	Revision int64
}

func (e *NotLeaderError) Error() string {
	if e.Leader.ID == 0 {
		return fmt.Sprintf("server: shard %d is changing leaders; ask again", e.Shard)
	}
	return fmt.Sprintf("server: node %d leads shard %d, at %s", e.Leader.ID, e.Shard, e.Leader.TCP)
}

// wire is the NOT_LEADER answer to a routed request.
func (e *NotLeaderError) wire() *boomerangv1.Error {
	hint := &boomerangv1.NotLeader{Shard: uint32(e.Shard), LeaderTcpAddress: e.Leader.TCP, Revision: e.Revision}
	if e.Leader.ID != 0 {
		hint.LeaderId = strconv.FormatUint(e.Leader.ID, 10)
	}
	return &boomerangv1.Error{Status: boomerangv1.Status_STATUS_NOT_LEADER, Message: strip(e.Error()), NotLeader: hint}
}

// notLeaderAnswer is what a routed request for shard gets instead of
// being forwarded to leader.
func (f *forwarder) notLeaderAnswer(shard uint16, leader cluster.NodeInfo) error {
	var rev int64
	if st := f.member.State(); st != nil {
		rev = st.Revision
	}
	return &NotLeaderError{Shard: shard, Leader: leader, Revision: rev}
}

// GetRoutes returns the routing view: which node leads each shard, as
// this node knows it (any client may ask).
func (s *Service) GetRoutes(_ context.Context, p auth.Principal, _ *boomerangv1.GetRoutesRequest) (*boomerangv1.GetRoutesResponse, error) {
	shards := s.sched.Shards()
	resp := &boomerangv1.GetRoutesResponse{Shards: uint32(shards), Client: p.Client}
	f := s.fwd.Load()
	if f == nil {
		resp.Standalone = true
		return resp, nil
	}
	resp.Node = strconv.FormatUint(f.member.ID(), 10)
	st := f.member.State()
	if st == nil {
		return resp, nil
	}
	resp.Revision = st.Revision
	for id, n := range st.Nodes {
		resp.Nodes = append(resp.Nodes, &boomerangv1.RouteNode{Id: strconv.FormatUint(id, 10), TcpAddress: n.TCP})
	}
	resp.Leaders = make([]string, shards)
	for shard := range uint16(shards) {
		if leader, ok := st.Leader(shard); ok {
			resp.Leaders[shard] = strconv.FormatUint(leader.ID, 10)
		}
	}
	return resp, nil
}

package client

import (
	"sync/atomic"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/shard"
)

// routes is one routing view (GetRoutes) in the shape lookups need. It is
// never changed once published: a hint makes a changed copy.
type routes struct {
	standalone bool
	shards     int
	revision   int64
	client     string            // the caller, whose groups' shards depend on it
	self       string            // the node the Client's own connection reaches
	addrs      map[string]string // node id → raw TCP address
	leaders    []string          // shard → node id; "" unknown
}

func newRoutes(r *boomerangv1.GetRoutesResponse) *routes {
	v := &routes{
		standalone: r.GetStandalone() || r.GetShards() == 0, shards: int(r.GetShards()), revision: r.GetRevision(),
		client: r.GetClient(), self: r.GetNode(), addrs: map[string]string{}, leaders: r.GetLeaders(),
	}
	for _, n := range r.GetNodes() {
		v.addrs[n.GetId()] = n.GetTcpAddress()
	}
	return v
}

// addr is the address of shard's leader, or "" for the Client's own
// connection: its node leads the shard, or no leader is known.
func (v *routes) addr(shard uint16) string {
	if int(shard) >= len(v.leaders) {
		return ""
	}
	id := v.leaders[shard]
	if id == v.self {
		return ""
	}
	return v.addrs[id]
}

// withLeader is v with node id, at addr, leading shard.
func (v *routes) withLeader(shard uint16, id, addr string) *routes {
	if int(shard) >= len(v.leaders) || id == "" {
		return v
	}
	nv := *v
	nv.leaders = append([]string(nil), v.leaders...)
	nv.leaders[shard] = id
	nv.addrs = make(map[string]string, len(v.addrs)+1)
	for k, a := range v.addrs {
		nv.addrs[k] = a
	}
	nv.addrs[id] = addr
	return &nv
}

// target is where req goes: the address of its shard's leader, or "" for
// the Client's own connection. An ungrouped task without keys may go to
// any node: spread picks the leader of one shard after another.
func (v *routes) target(req *boomerangv1.Request, spread *atomic.Uint32) string {
	switch b := req.GetBody().(type) {
	case *boomerangv1.Request_RegisterTask:
		t := b.RegisterTask
		if s, ok := shard.OfTask(v.shards, v.client, t.GetGroup(), t.GetIdempotencyKey(), t.GetReplaceKey()); ok {
			return v.addr(s)
		}
		return v.addr(uint16(spread.Add(1) % uint32(v.shards)))
	case *boomerangv1.Request_GetGroup:
		return v.groupAddr(b.GetGroup.GetClient(), b.GetGroup.GetGroup())
	case *boomerangv1.Request_UnblockGroup:
		return v.groupAddr(b.UnblockGroup.GetClient(), b.UnblockGroup.GetGroup())
	case *boomerangv1.Request_SkipGroup:
		return v.groupAddr(b.SkipGroup.GetClient(), b.SkipGroup.GetGroup())
	}
	if id, ok := taskID(req); ok {
		return v.addr(shard.OfID(id))
	}
	return ""
}

func (v *routes) groupAddr(client, group string) string {
	if client == "" {
		client = v.client
	}
	return v.addr(shard.OfGroup(v.shards, client, group))
}

// taskID is the task (or dead letter: it keeps its task's id) a request
// is about.
func taskID(req *boomerangv1.Request) (uint64, bool) {
	switch b := req.GetBody().(type) {
	case *boomerangv1.Request_UpdateTask:
		return b.UpdateTask.GetId(), true
	case *boomerangv1.Request_CancelTask:
		return b.CancelTask.GetId(), true
	case *boomerangv1.Request_GetTask:
		return b.GetTask.GetId(), true
	case *boomerangv1.Request_GetTaskAttempts:
		return b.GetTaskAttempts.GetId(), true
	case *boomerangv1.Request_GetDeadLetter:
		return b.GetDeadLetter.GetId(), true
	case *boomerangv1.Request_ReplayDeadLetter:
		return b.ReplayDeadLetter.GetId(), true
	case *boomerangv1.Request_DeleteDeadLetter:
		return b.DeleteDeadLetter.GetId(), true
	}
	return 0, false
}

// routable reports whether req may be answered NOT_LEADER: every
// operation but those on the session itself and the routing view.
func routable(req *boomerangv1.Request) bool {
	switch req.GetBody().(type) {
	case *boomerangv1.Request_Login, *boomerangv1.Request_RefreshSession, *boomerangv1.Request_Logout,
		*boomerangv1.Request_GetRoutes, *boomerangv1.Request_GetServerInfo, *boomerangv1.Request_RegisterTasks:
		return false
	}
	return true
}

// repeatable reports whether req may be sent again after a connection
// broke with it in flight: it changes nothing, or a repeat finds what
// the first attempt did.
func repeatable(req *boomerangv1.Request) bool {
	switch b := req.GetBody().(type) {
	case *boomerangv1.Request_RegisterTask:
		return b.RegisterTask.GetIdempotencyKey() != ""
	case *boomerangv1.Request_GetTask, *boomerangv1.Request_GetTaskAttempts, *boomerangv1.Request_GetDeadLetter,
		*boomerangv1.Request_GetGroup, *boomerangv1.Request_ListTasks, *boomerangv1.Request_ListDeadLetters,
		*boomerangv1.Request_ListGroups, *boomerangv1.Request_GetStats:
		return true
	}
	return false
}

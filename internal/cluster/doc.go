// Package cluster turns several nodes into one service coordinated
// through etcd. etcd holds only three things, under the key prefix
// /boomerang/<cluster>/:
//
//   - membership: each node's NodeInfo (its id, its replication address,
//     its client addresses), put under the lease of the node's session,
//     so that it disappears when the node stops renewing it;
//   - the shard map: for every shard, the nodes that hold a replica and
//     the one preferred as leader, in one key written only with
//     compare-and-swap on its revision;
//   - the election of one placement controller
//     (go.etcd.io/etcd/client/v3/concurrency.Election).
//
// Task data never goes through etcd. Besides those, operators' marks
// (a node draining or removed) and each node's report of the shards it
// leads live there too: the report lets any node, boomtool and the SDK
// find a shard's leader.
//
// # Placement
//
// The controller computes the next map from the current one and the
// live nodes (Plan): the replication factor (default 3, fewer while
// fewer nodes exist), replicas spread over nodes, preferred leaders
// balanced over nodes. A node that vanished keeps its replicas until
// DeadTimeout, then they are placed elsewhere; a draining or removed
// node's replicas move away. The controller writes the map only while
// it holds the election, in a transaction that compares both its
// election key and the map's revision.
//
// # Agents
//
// Every node runs an Agent that makes its replicas match the map. A
// node hosts each shard the map gives it: a new group with the map's
// initial voters, or, joining an existing group, empty, waiting for its
// leader's snapshot. The agent of a shard's leader changes the group's
// configuration one step at a time: add a missing replica as a learner,
// promote it once it has caught up, remove replicas the map no longer
// holds once every wanted one votes (handing the leadership over first
// when the leader itself goes), and transfer the leadership to the
// preferred leader. Before every step the agent reads the map again and
// acts only if its revision is still the one the step was planned on:
// an agent acting on an outdated map is refused. A node removed from a
// group drops its replica.
//
// # etcd unavailable
//
// Shards keep serving and firing with their current replicas and
// leaders: nothing on the request path reads etcd. Only placement
// changes wait until etcd answers again.
package cluster

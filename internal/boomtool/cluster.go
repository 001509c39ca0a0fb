package boomtool

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// The cluster commands: placement shown and changed through any node
// (see docs/cluster.md).

func (a *app) clusterCommand() *cobra.Command {
	cmd := parent(&cobra.Command{Use: "cluster", Short: "Show and change a cluster's nodes and shard placement"})
	cmd.AddCommand(
		&cobra.Command{
			Use: "status", Short: "Summarize the cluster: nodes, shards, leaders", Args: exactArgs(0, ""),
			RunE: a.showCluster(a.writeClusterStatus),
		},
		&cobra.Command{Use: "nodes", Short: "List the nodes", Args: exactArgs(0, ""), RunE: a.showCluster(a.writeClusterNodes)},
		&cobra.Command{Use: "shards", Short: "List the shards: replicas, leader, preferred leader", Args: exactArgs(0, ""), RunE: a.showCluster(a.writeClusterShards)},
		&cobra.Command{
			Use: "move SHARD FROM TO", Short: "Move a shard's replica from one node to another (FROM -: move only its leadership to TO)",
			Long: "Move a shard's replica from one node to another, or with FROM - only its leadership to TO.\n" +
				"SHARD system is the system group (clients and sessions): only its leadership moves.",
			Example: "  boomtool cluster move 12 1 4\n  boomtool cluster move 12 - 2\n  boomtool cluster move system - 3", Args: exactArgs(3, "SHARD FROM TO"),
			RunE: func(cmd *cobra.Command, args []string) error {
				shard, err := parseShard(args[0])
				if err != nil {
					return err
				}
				from := strings.TrimPrefix(args[1], "-")
				return a.changeCluster(cmd, &boomerangv1.ChangeClusterRequest{Change: &boomerangv1.ChangeClusterRequest_Move{
					Move: &boomerangv1.ShardMove{Shard: uint32(shard), From: from, To: args[2]},
				}})
			},
		},
		&cobra.Command{
			Use: "drain NODE", Short: "Move every replica off a node (--undo lets it hold replicas again)", Args: exactArgs(1, "NODE"),
			RunE: func(cmd *cobra.Command, args []string) error {
				req := &boomerangv1.ChangeClusterRequest{Change: &boomerangv1.ChangeClusterRequest_Drain{Drain: args[0]}}
				if undo, _ := cmd.Flags().GetBool("undo"); undo {
					req.Change = &boomerangv1.ChangeClusterRequest_Undrain{Undrain: args[0]}
				}
				return a.changeCluster(cmd, req)
			},
		},
		&cobra.Command{
			Use: "remove NODE", Short: "Move every replica off a node for good", Args: exactArgs(1, "NODE"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.changeCluster(cmd, &boomerangv1.ChangeClusterRequest{Change: &boomerangv1.ChangeClusterRequest_Remove{Remove: args[0]}})
			},
		},
	)
	for _, c := range cmd.Commands() {
		if c.Name() == "drain" {
			c.Flags().Bool("undo", false, "let the node hold replicas again")
		}
	}
	return cmd
}

func (a *app) showCluster(write func(*boomerangv1.GetClusterResponse) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		return a.run(cmd, func(ctx context.Context, c *client.Client) error {
			resp, err := c.GetCluster(ctx, &boomerangv1.GetClusterRequest{})
			if err != nil || a.output == "json" {
				return jsonOr(a, resp, err)
			}
			return write(resp)
		})
	}
}

func (a *app) changeCluster(cmd *cobra.Command, req *boomerangv1.ChangeClusterRequest) error {
	return a.run(cmd, func(ctx context.Context, c *client.Client) error {
		resp, err := c.ChangeCluster(ctx, req)
		if err != nil || a.output == "json" {
			return jsonOr(a, resp, err)
		}
		fmt.Fprintln(a.env.Stdout, "Done: the placement controller carries it out; watch it with \"boomtool cluster shards\".")
		return nil
	})
}

func (a *app) writeClusterStatus(r *boomerangv1.GetClusterResponse) error {
	if r.GetStandalone() {
		fmt.Fprintln(a.env.Stdout, "Standalone node: it leads every shard.")
		return nil
	}
	live, led, settled := 0, map[string]int{}, 0
	for _, n := range r.GetNodes() {
		if n.GetLive() {
			live++
		}
	}
	for _, s := range r.GetShards() {
		led[s.GetLeader()]++
		if s.GetLeader() != "" && s.GetLeader() == s.GetPreferredLeader() {
			settled++
		}
	}
	fmt.Fprintf(a.env.Stdout, "Cluster %q: %d of %d nodes live, %d shards, %d led by their preferred leader, %d without a known leader; shard map revision %d.\n",
		r.GetName(), live, len(r.GetNodes()), len(r.GetShards()), settled, led[""], r.GetMapRevision())
	if sys := r.GetSystem(); sys != nil {
		fmt.Fprintf(a.env.Stdout, "System group (clients and sessions): led by %s, voters %s.\n",
			dashIfEmpty(sys.GetLeader()), dashIfEmpty(strings.Join(sys.GetReplicas(), ",")))
	}
	return a.writeClusterNodes(r)
}

// writeClusterNodes lists the nodes with the task shards' replicas each
// holds and leads (the system group not counted).
func (a *app) writeClusterNodes(r *boomerangv1.GetClusterResponse) error {
	led, held := map[string]int{}, map[string]int{}
	for _, s := range r.GetShards() {
		led[s.GetLeader()]++
		for _, id := range s.GetReplicas() {
			held[id]++
		}
	}
	t := newTable(a.env.Stdout, "NODE", "LIVE", "MARK", "TCP", "HTTP", "RAFT", "ZONE", "REPLICAS", "LEADS")
	for _, n := range r.GetNodes() {
		t.row(n.GetId(), yesNo(n.GetLive()), dashIfEmpty(n.GetMark()), n.GetTcpAddress(), n.GetHttpAddress(), dashIfEmpty(n.GetRaftAddress()),
			dashIfEmpty(n.GetZone()), strconv.Itoa(held[n.GetId()]), strconv.Itoa(led[n.GetId()]))
	}
	return t.flush()
}

func (a *app) writeClusterShards(r *boomerangv1.GetClusterResponse) error {
	t := newTable(a.env.Stdout, "SHARD", "LEADER", "PREFERRED", "REPLICAS", "LEARNERS")
	row := func(name string, s *boomerangv1.ClusterShard) {
		t.row(name, dashIfEmpty(s.GetLeader()), dashIfEmpty(s.GetPreferredLeader()), dashIfEmpty(strings.Join(s.GetReplicas(), ",")),
			dashIfEmpty(strings.Join(s.GetLearners(), ",")))
	}
	for _, s := range r.GetShards() {
		row(strconv.FormatUint(uint64(s.GetShard()), 10), s)
	}
	if sys := r.GetSystem(); sys != nil {
		row("system", sys)
	}
	return t.flush()
}

// systemShard is the system group's shard number (store.SystemShard).
const systemShard = 0xFFFF

// parseShard reads a shard number, or system for the system group.
func parseShard(s string) (uint64, error) {
	if s == "system" {
		return systemShard, nil
	}
	shard, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, usagef("SHARD must be a shard number or system, got %q", s)
	}
	return shard, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

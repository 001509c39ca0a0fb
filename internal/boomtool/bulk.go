package boomtool

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) deleteAllCommand() *cobra.Command {
	var req boomerangv1.CancelTasksRequest
	cmd := &cobra.Command{
		Use:   "delete-all",
		Short: "Cancel every task of a client, or of one of its groups",
		Long: `Cancel every task of a client (yours; an admin may name another), or of
one of its groups. Tasks being delivered are skipped and counted: cancel
them one by one once their attempt ends. --dry-run only counts.`,
		Example: "  boomtool delete-all --group order-17 --dry-run\n  boomtool delete-all --group order-17",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.CancelTasks(ctx, &req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				verb := "Cancelled"
				if req.DryRun {
					verb = "Would cancel"
				}
				fmt.Fprintf(a.env.Stdout, "%s %d of %d matching tasks; %d being delivered were skipped.\n",
					verb, max(resp.GetCancelled(), dry(req.DryRun, resp.GetMatched()-resp.GetSkipped())), resp.GetMatched(), resp.GetSkipped())
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Client, "client", "", "whose tasks (admin only; default: yours)")
	f.StringVar(&req.Group, "group", "", "only this group's tasks")
	f.BoolVar(&req.DryRun, "dry-run", false, "count, change nothing")
	return cmd
}

func (a *app) dlqPurgeCommand() *cobra.Command {
	var (
		req    boomerangv1.PurgeDeadLettersRequest
		before timeFlag
	)
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Delete every dead letter matching a filter",
		Long: `Delete every dead letter matching the filter: a client's (yours; an admin
may name another, or leave it out for all), of a group, failed before a
time, whose error contains a text. A group's blocked head is kept and
counted: skip or delete it with "boomtool group skip" or "boomtool dlq
delete". --dry-run only counts.`,
		Example: "  boomtool dlq purge --error 'HTTP 404' --dry-run\n  boomtool dlq purge --group order-17 --before 2026-11-01T00:00:00Z",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if before.set {
				req.FailedBeforeMs = before.t.UnixMilli()
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.PurgeDeadLetters(ctx, &req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				verb := "Deleted"
				if req.DryRun {
					verb = "Would delete"
				}
				fmt.Fprintf(a.env.Stdout, "%s %d of %d matching dead letters; %d blocked heads were kept.\n",
					verb, max(resp.GetDeleted(), dry(req.DryRun, resp.GetMatched()-resp.GetSkipped())), resp.GetMatched(), resp.GetSkipped())
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Client, "client", "", "whose dead letters (admin only; default: yours, an admin's: all)")
	f.StringVar(&req.Group, "group", "", "only this group's")
	f.Var(&before, "before", "only those that failed before this time (RFC 3339)")
	f.StringVar(&req.ErrorContains, "error", "", "only those whose last error contains this text")
	f.BoolVar(&req.DryRun, "dry-run", false, "count, change nothing")
	return cmd
}

// dry is n in a dry run, else 0: what a dry run would have done.
func dry(dryRun bool, n uint64) uint64 {
	if dryRun {
		return n
	}
	return 0
}

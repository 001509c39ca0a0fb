package boomtool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) dlqCommand() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:   "dlq",
		Short: "Inspect, replay and delete dead letters",
		Long: `A task whose delivery attempts are exhausted becomes a dead letter: the
failed occurrence, its last error and attempt count.`,
	})
	cmd.AddCommand(a.dlqListCommand(), a.dlqShowCommand(), a.dlqReplayCommand(), a.dlqDeleteCommand(), a.dlqPurgeCommand())
	return cmd
}

func (a *app) dlqListCommand() *cobra.Command {
	var (
		q   boomerangv1.ListDeadLettersRequest
		all bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List dead letters",
		Example: "  boomtool dlq list\n  boomtool dlq list --all -o json",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := listDeadLetters(ctx, c, &q, all)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				return a.writeDeadLetterTable(resp)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Client, "of", "", "admin: list this client's dead letters (default: your own; an admin's: everyone's)")
	f.Uint32Var(&q.PageSize, "limit", 100, "dead letters per page")
	f.Uint64Var(&q.PageToken, "page-token", 0, "continue from this page token")
	f.BoolVar(&all, "all", false, "fetch every page")
	return cmd
}

func listDeadLetters(ctx context.Context, c *client.Client, q *boomerangv1.ListDeadLettersRequest, all bool) (*boomerangv1.ListDeadLettersResponse, error) {
	if !all {
		return c.ListDeadLetters(ctx, q)
	}
	out := &boomerangv1.ListDeadLettersResponse{}
	for d, err := range c.DeadLetters(ctx, q) {
		if err != nil {
			return nil, err
		}
		out.DeadLetters = append(out.DeadLetters, d)
	}
	return out, nil
}

func (a *app) writeDeadLetterTable(resp *boomerangv1.ListDeadLettersResponse) error {
	if len(resp.GetDeadLetters()) == 0 {
		fmt.Fprintln(a.env.Stdout, "No dead letters.")
		return nil
	}
	now := a.env.Now()
	t := newTable(a.env.Stdout, "ID", "TASK", "CLIENT", "GROUP", "FAILED", "ATTEMPTS", "BLOCKS", "LAST ERROR")
	for _, d := range resp.GetDeadLetters() {
		blocks := "no"
		if d.GetBlocksGroup() {
			blocks = "yes"
		}
		t.row(strconv.FormatUint(d.GetId(), 10), strconv.FormatUint(d.GetTask().GetId(), 10), d.GetTask().GetClient(),
			dash(d.GetTask().GetGroup()), relative(time.UnixMilli(d.GetFailedMs()), now),
			strconv.FormatUint(uint64(d.GetAttempts()), 10), blocks, cut(d.GetLastError(), 60))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if next := resp.GetNextPageToken(); next != 0 {
		fmt.Fprintf(a.env.Stdout, "More dead letters: add --page-token %d, or use --all.\n", next)
	}
	return nil
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func (a *app) dlqShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Aliases: []string{"get"},
		Short:   "Show a dead letter and its task",
		Example: "  boomtool dlq show 7",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("dead letter", args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetDeadLetter(ctx, &boomerangv1.GetDeadLetterRequest{Id: id})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				d, now := resp.GetDeadLetter(), a.env.Now()
				f := newFields(a.env.Stdout)
				f.add("Dead letter", strconv.FormatUint(d.GetId(), 10))
				f.add("Failed", when(d.GetFailedMs(), now))
				f.add("Attempts", strconv.FormatUint(uint64(d.GetAttempts()), 10))
				f.add("Last error", d.GetLastError())
				f.add("Blocks group", strconv.FormatBool(d.GetBlocksGroup()))
				if err := f.flush(); err != nil {
					return err
				}
				fmt.Fprintln(a.env.Stdout, "Task:")
				return writeTask(&indent{w: a.env.Stdout}, d.GetTask(), now)
			})
		},
	}
}

func (a *app) dlqReplayCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "replay ID",
		Short: "Deliver a dead letter's task again",
		Long: `Deliver a dead letter's task again, with fresh attempts, and remove it from
the queue. It is due now, behind the tasks of its group already due. A
group's blocking head (BLOCKS yes) is different: replaying it unblocks the
group, as "group unblock" does, and the task keeps its due time and its place
at the head of the group.`,
		Example: "  boomtool dlq replay 7",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("dead letter", args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ReplayDeadLetter(ctx, &boomerangv1.ReplayDeadLetterRequest{Id: id})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Replaying dead letter %d as task %d, due %s.\n", id, resp.GetTask().GetId(), when(resp.GetTask().GetFireAtMs(), a.env.Now()))
				return nil
			})
		},
	}
}

func (a *app) dlqDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Aliases: []string{"rm"},
		Short:   "Delete a dead letter",
		Example: "  boomtool dlq delete 7",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("dead letter", args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.DeleteDeadLetter(ctx, &boomerangv1.DeleteDeadLetterRequest{Id: id})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Deleted dead letter %d.\n", id)
				return nil
			})
		},
	}
}

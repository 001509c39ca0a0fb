package boomtool

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) groupCommand() *cobra.Command {
	var of string
	cmd := parent(&cobra.Command{
		Use:   "group",
		Short: "List, show, unblock or skip groups",
		Long: `A group whose task failed for good in block-on-error mode is blocked: its
later tasks wait until the group is unblocked (the failed task is delivered
again) or skipped (it stays in the dead letter queue and the group goes on).`,
	})
	cmd.PersistentFlags().StringVar(&of, "of", "", "admin and read-only: the group of this client (default: your own)")
	cmd.AddCommand(
		a.groupListCommand(&of),
		&cobra.Command{
			Use: "show GROUP", Short: "Show a group's state", Args: exactArgs(1, "GROUP"),
			Example: "  boomtool group show customer-7",
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.run(cmd, func(ctx context.Context, c *client.Client) error {
					resp, err := c.GetGroup(ctx, &boomerangv1.GetGroupRequest{Client: of, Group: args[0]})
					if err != nil {
						return err
					}
					if a.output == "json" {
						return writeJSON(a.env.Stdout, resp)
					}
					return a.writeGroup(a.env.Stdout, resp.GetGroup())
				})
			},
		},
		&cobra.Command{
			Use: "unblock GROUP", Short: "Deliver a blocked group's failed task again, then go on", Args: exactArgs(1, "GROUP"),
			Example: "  boomtool group unblock customer-7",
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.run(cmd, func(ctx context.Context, c *client.Client) error {
					resp, err := c.UnblockGroup(ctx, &boomerangv1.UnblockGroupRequest{Client: of, Group: args[0]})
					if err != nil {
						return err
					}
					if a.output == "json" {
						return writeJSON(a.env.Stdout, resp)
					}
					fmt.Fprintf(a.env.Stdout, "Unblocked group %s: task %d is delivered again.\n", args[0], resp.GetTask().GetId())
					return nil
				})
			},
		},
		&cobra.Command{
			Use: "skip GROUP", Short: "Leave a blocked group's failed task dead-lettered and go on", Args: exactArgs(1, "GROUP"),
			Example: "  boomtool group skip customer-7",
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.run(cmd, func(ctx context.Context, c *client.Client) error {
					resp, err := c.SkipGroup(ctx, &boomerangv1.SkipGroupRequest{Client: of, Group: args[0]})
					if err != nil {
						return err
					}
					if a.output == "json" {
						return writeJSON(a.env.Stdout, resp)
					}
					fmt.Fprintf(a.env.Stdout, "Skipped the blocked task of group %s; the group goes on.\n", args[0])
					return nil
				})
			},
		},
	)
	return cmd
}

func (a *app) writeGroup(w io.Writer, g *boomerangv1.Group) error {
	f := newFields(w)
	f.add("Client", g.GetClient())
	f.add("Group", g.GetGroup())
	f.add("Tasks", strconv.FormatUint(g.GetTasks(), 10))
	f.add("Blocked", strconv.FormatBool(g.GetBlocked()))
	f.add("Rate limit", rateString(g.GetRateLimit()))
	if g.GetBlocked() {
		f.add("Blocked by dead letter", strconv.FormatUint(g.GetBlockedDeadLetterId(), 10))
		f.add("Blocked since", when(g.GetBlockedSinceMs(), a.env.Now()))
	}
	return f.flush()
}

// indent prefixes every line written through it with two spaces.
type indent struct {
	w   io.Writer
	mid bool // the last write ended inside a line
}

func (i *indent) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p)+8)
	for _, b := range p {
		if !i.mid {
			out = append(out, ' ', ' ')
		}
		out = append(out, b)
		i.mid = b != '\n'
	}
	if _, err := i.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

package boomtool

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) sessionCommand() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:   "session",
		Short: "List and revoke login sessions",
		Long: `Sessions are named by a handle (a hash of the session id, which is never
shown). A client sees and revokes its own sessions; an admin those of every
client; a read-only client sees every client's.`,
	})
	cmd.AddCommand(a.sessionListCommand(), a.sessionRevokeCommand())
	return cmd
}

func (a *app) sessionListCommand() *cobra.Command {
	var of string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List live sessions",
		Example: "  boomtool session list\n  boomtool session list --of billing",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListSessions(ctx, &boomerangv1.ListSessionsRequest{Client: of})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				if len(resp.GetSessions()) == 0 {
					fmt.Fprintln(a.env.Stdout, "No sessions.")
					return nil
				}
				now := a.env.Now()
				t := newTable(a.env.Stdout, "HANDLE", "CLIENT", "ROLE", "FROM", "CREATED", "EXPIRES", "")
				for _, s := range resp.GetSessions() {
					current := ""
					if s.GetCurrent() {
						current = "(this one)"
					}
					t.row(s.GetHandle(), s.GetClient(), roleWord(s.GetRole()), dash(s.GetSource()),
						relative(time.UnixMilli(s.GetCreatedMs()), now), relative(time.UnixMilli(s.GetExpiresMs()), now), current)
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().StringVar(&of, "of", "", "admin and read-only: this client's sessions (default: everyone's; others: their own)")
	return cmd
}

func (a *app) sessionRevokeCommand() *cobra.Command {
	var (
		of  string
		all bool
	)
	cmd := &cobra.Command{
		Use:   "revoke [HANDLE]",
		Short: "End a session by its handle, or all of a client's with --all",
		Example: `  boomtool session revoke 3f2a9c0d81b4e7a6 --of billing
  boomtool session revoke --all --of billing`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &boomerangv1.RevokeSessionsRequest{Client: of}
			switch {
			case len(args) == 1 && all:
				return usagef("give a session handle or --all, not both")
			case len(args) == 1:
				req.Handle = args[0]
			case !all:
				return usagef("give a session handle (see \"boomtool session list\"), or --all")
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.RevokeSessions(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Revoked %d session%s.\n", resp.GetRevoked(), plural(int(resp.GetRevoked())))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&of, "of", "", "admin: the sessions of this client (default: your own)")
	cmd.Flags().BoolVar(&all, "all", false, "every session of the client")
	return cmd
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

package boomtool

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) loginCommand() *cobra.Command {
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in and keep the session for later commands",
		Long: `Log in with --client and --password (or BOOMERANG_CLIENT and
BOOMERANG_PASSWORD, or --password-stdin) and save the session, readable only
by you, in <user config dir>/boomerang/session.json. Later commands use it
until it expires, when they ask you to log in again.`,
		Example: `  boomtool login --client admin --password "$ADMIN_PASSWORD"
  echo "$PW" | boomtool login --client billing --password-stdin --addr 10.0.0.2:7070`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fromStdin {
				pw, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
				if err != nil && pw == "" {
					return usagef("--password-stdin: no password on standard input")
				}
				a.password = strings.TrimRight(pw, "\r\n")
			}
			creds, err := a.credentials()
			if err != nil {
				return err
			}
			if creds.ClientID == "" {
				return usagef("log in with --client ID and --password (or %s and %s)", EnvClient, EnvPassword)
			}
			addr := first(a.addr, a.env.Getenv(EnvAddr), DefaultAddr)
			ctx, cancel := a.context(cmd)
			defer cancel()
			c, err := client.Dial(ctx, addr, creds)
			if err != nil {
				return err
			}
			defer c.Close()
			s := c.Session()
			saved := &savedSession{Addr: addr, Client: creds.ClientID, SessionID: s.ID, ExpiresAt: s.ExpiresAt, Admin: s.Admin}
			if err := a.saveSession(saved); err != nil {
				return err
			}
			if a.output == "json" {
				return writeJSON(a.env.Stdout, &boomerangv1.LoginResponse{SessionId: s.ID, ExpiresAtMs: s.ExpiresAt.UnixMilli(), Admin: s.Admin})
			}
			role := ""
			if s.Admin {
				role = " (admin)"
			}
			fmt.Fprintf(a.env.Stdout, "Logged in to %s as %s%s; the session expires %s.\n", addr, creds.ClientID, role, when(s.ExpiresAt.UnixMilli(), a.env.Now()))
			return nil
		},
	}
	cmd.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	return cmd
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the saved session",
		Args:  exactArgs(0, ""),
		RunE: func(*cobra.Command, []string) error {
			had, err := a.removeSession()
			if err != nil {
				return err
			}
			if a.output == "json" {
				fmt.Fprintf(a.env.Stdout, "{\n  \"removed\": %t\n}\n", had)
				return nil
			}
			if had {
				fmt.Fprintln(a.env.Stdout, "Logged out: the saved session is gone.")
			} else {
				fmt.Fprintln(a.env.Stdout, "There was no saved session.")
			}
			return nil
		},
	}
}

func (a *app) infoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Show the server's version, addresses and limits",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				info, err := c.GetServerInfo(ctx, &boomerangv1.GetServerInfoRequest{})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, info)
				}
				f := newFields(a.env.Stdout)
				f.add("Version", info.GetVersion())
				f.add("Started", when(info.GetStartedMs(), a.env.Now()))
				f.add("Partitions", fmt.Sprint(info.GetPartitions()))
				f.add("TCP address", info.GetTcpAddress())
				f.add("HTTP address", info.GetHttpAddress())
				f.add("Max payload", fmt.Sprintf("%d bytes", info.GetMaxPayloadBytes()))
				f.add("Max frame", fmt.Sprintf("%d bytes", info.GetMaxFrameBytes()))
				return f.flush()
			})
		},
	}
}

package boomtool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
			tlsNow := a.tls.settings(nil, a.env.Getenv)
			opts, err := a.dialOptions(nil)
			if err != nil {
				return err
			}
			ctx, cancel := a.context(cmd)
			defer cancel()
			c, err := client.Dial(ctx, addr, creds, opts...)
			if err != nil {
				return err
			}
			defer c.Close()
			s := c.Session()
			role := roleWord(s.Role)
			saved := &savedSession{Addr: addr, Client: creds.ClientID, SessionID: s.ID, ExpiresAt: s.ExpiresAt, Admin: s.Admin, Role: role}
			tlsNow.saved(saved)
			if err := a.saveSession(saved); err != nil {
				return err
			}
			if a.output == "json" {
				return writeJSON(a.env.Stdout, &boomerangv1.LoginResponse{SessionId: s.ID, ExpiresAtMs: s.ExpiresAt.UnixMilli(), Admin: s.Admin, Role: s.Role})
			}
			suffix := ""
			if role != "client" {
				suffix = " (" + role + ")"
			}
			fmt.Fprintf(a.env.Stdout, "Logged in to %s as %s%s; the session expires %s.\n", addr, creds.ClientID, suffix, when(s.ExpiresAt.UnixMilli(), a.env.Now()))
			return nil
		},
	}
	cmd.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	return cmd
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "End the saved session on the server and forget it",
		Long: `End the saved session on the server, so that its id is worthless from then
on, and delete the session file. If the server cannot be reached the file is
deleted anyway, and the command says the session stays valid on the server
until it expires (exit code 1).`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			saved, err := a.loadSession()
			if err != nil {
				return err
			}
			var serverErr error
			if saved != nil && (saved.ExpiresAt.IsZero() || a.env.Now().Before(saved.ExpiresAt)) {
				serverErr = a.endOnServer(cmd, saved)
			}
			had, err := a.removeSession()
			if err != nil {
				return err
			}
			if a.output == "json" {
				fmt.Fprintf(a.env.Stdout, "{\n  \"removed\": %t,\n  \"endedOnServer\": %t\n}\n", had, saved != nil && serverErr == nil)
			} else if !had {
				fmt.Fprintln(a.env.Stdout, "There was no saved session.")
			} else if serverErr == nil {
				fmt.Fprintln(a.env.Stdout, "Logged out: the session is ended on the server and the saved session is gone.")
			}
			if serverErr != nil {
				return fmt.Errorf("the saved session is deleted here, but the server could not end it, so it stays valid there until %s: %w",
					saved.ExpiresAt.UTC().Format(time.RFC3339), serverErr)
			}
			return nil
		},
	}
}

// endOnServer ends a saved session on its server. One the server no
// longer knows, or that has expired, is ended already.
func (a *app) endOnServer(cmd *cobra.Command, saved *savedSession) error {
	ctx, cancel := a.context(cmd)
	defer cancel()
	opts, err := a.dialOptions(saved)
	if err != nil {
		return err
	}
	c, err := client.Dial(ctx, saved.Addr, client.Credentials{}, append(opts, client.WithSession(saved.session()))...)
	if err == nil {
		defer c.Close()
		_, err = c.Logout(ctx, &boomerangv1.LogoutRequest{})
	}
	if errors.Is(err, client.ErrSessionExpired) || errors.Is(err, client.ErrUnauthorized) {
		return nil
	}
	return err
}

// roleWord names a role for people: "client", "admin", "read-only".
func roleWord(r boomerangv1.Role) string {
	if r == boomerangv1.Role_ROLE_UNSPECIFIED {
		return "client"
	}
	return enumWord(r.String(), "ROLE_")
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

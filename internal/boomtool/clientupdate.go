package boomtool

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) clientUpdateCommand() *cobra.Command {
	var (
		s                     settings
		noRetry, noDeadLetter bool
		noRules               bool
	)
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a client's settings (admin)",
		Long: `Change a client's settings: only the flags given change. A new role ends the
client's sessions. --callback-allow and --callback-deny replace the client's
rules as a whole.`,
		Example: `  boomtool client update billing --callback https://billing.example.com/hooks --mode block-on-error
  boomtool client update billing --max-attempts 5 --backoff fixed --retry-initial 30s
  boomtool client update ops --role read-only
  boomtool client update billing --group-rate 10/1s --group-rate-for invoices=1/1m`,
		Args: exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := cmd.Flags().Changed
			req := &boomerangv1.UpdateClientRequest{ClientId: args[0], ClearCallback: s.noCallback, ClearRetry: noRetry}
			if changed("callback") || changed("callback-timeout") || changed("pool") {
				cb, err := parseCallback(s.callback, s.cbTimeout.d, s.pool)
				if err != nil {
					return err
				}
				if cb == nil {
					return usagef("--callback-timeout and --pool need --callback")
				}
				req.Callback = cb
			}
			if changed("group-limit") {
				req.GroupLimit = &s.groupLimit
			}
			var err error
			if req.GroupRateLimit, req.GroupRateLimits, err = s.rates.limits(); err != nil {
				return err
			}
			if changed("mode") {
				m, err := parseMode(s.mode)
				if err != nil {
					return err
				}
				req.DefaultMode = &m
			}
			if changed("role") {
				r, err := parseRole(s.role)
				if err != nil || r == boomerangv1.Role_ROLE_UNSPECIFIED {
					return usagef("bad role %q: want client, admin or read-only", s.role)
				}
				req.Role = &r
			}
			if changed("backoff") || changed("retry-initial") || changed("retry-max") || changed("retry-multiplier") ||
				changed("retry-jitter") || changed("max-attempts") {
				r, err := s.retry()
				if err != nil {
					return err
				}
				req.Retry = r
			}
			if changed("dlq-max") || changed("dlq-retention") || noDeadLetter {
				req.DeadLetters = &boomerangv1.DeadLetterPolicy{MaxEntries: s.dlqMax, RetentionMs: s.ret.d.Milliseconds()}
			}
			if changed("callback-allow") || changed("callback-deny") || noRules {
				req.CallbackRules = &boomerangv1.CallbackRules{Allow: s.allow, Deny: s.deny}
			}
			if proto.Equal(req, &boomerangv1.UpdateClientRequest{ClientId: args[0]}) {
				return usagef("nothing to change: give at least one setting (see --help)")
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.UpdateClient(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Updated client %s.\n", resp.GetClient().GetId())
				return a.writeClient(resp.GetClient())
			})
		},
	}
	f := cmd.Flags()
	s.register(f)
	f.BoolVar(&s.noCallback, "no-callback", false, "remove the default callback")
	f.BoolVar(&noRetry, "no-retry", false, "remove the retry policy (the server's applies)")
	f.BoolVar(&noDeadLetter, "no-dlq-limits", false, "remove the dead letter limits")
	f.BoolVar(&noRules, "no-callback-rules", false, "remove the client's callback rules")
	completeSettings(cmd)
	return cmd
}

func (a *app) clientPasswdCommand() *cobra.Command {
	var current, next string
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "passwd [ID]",
		Short: "Change a password: your own, or (admin) any client's",
		Long: `Change a password. Your own needs your current one: --current-password, or
the --password you log in with. An admin sets any client's without it. The
client's other sessions end.`,
		Example: `  boomtool client passwd --current-password "$OLD" --new-password "$NEW"
  echo "$NEW" | boomtool client passwd billing --new-password-stdin`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromStdin {
				line, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
				if err != nil && line == "" {
					return usagef("--new-password-stdin: no password on standard input")
				}
				next = strings.TrimRight(line, "\r\n")
			}
			if next == "" {
				return usagef("give the new password with --new-password or --new-password-stdin")
			}
			req := &boomerangv1.ChangePasswordRequest{CurrentPassword: first(current, a.password, a.env.Getenv(EnvPassword)), NewPassword: next}
			if len(args) == 1 {
				req.ClientId = args[0]
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ChangePassword(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Changed the password of %s; its other sessions are ended.\n", first(req.ClientId, "your client"))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&current, "current-password", "", "your current password (default: --password or $"+EnvPassword+")")
	f.StringVar(&next, "new-password", "", "the new password, at least 8 characters")
	f.BoolVar(&fromStdin, "new-password-stdin", false, "read the new password from the first line of standard input")
	return cmd
}

func (a *app) clientRotateCommand() *cobra.Command {
	var (
		secret  string
		overlap durationFlag
	)
	cmd := &cobra.Command{
		Use:   "rotate-secret [ID]",
		Short: "Give a client a new webhook signing secret",
		Long: `Give a client (default: your own) a new webhook signing secret, printed once.
For --overlap (default 24h) the old secret still signs too: each webhook
carries both signatures, so receivers can switch to the new secret at any time
within it. --overlap 0s drops the old secret at once.`,
		Example: `  boomtool client rotate-secret billing
  boomtool client rotate-secret billing --signing-secret "$NEW_SECRET" --overlap 1h`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &boomerangv1.RotateSigningSecretRequest{SigningSecret: []byte(secret)}
			if len(args) == 1 {
				req.ClientId = args[0]
			}
			if overlap.set {
				ms := overlap.d.Milliseconds()
				req.OverlapMs = &ms
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.RotateSigningSecret(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Rotated the signing secret of %s.\n", resp.GetClient().GetId())
				f := newFields(a.env.Stdout)
				f.add("Signing secret", secretString(resp.GetSigningSecret()))
				if ms := resp.GetClient().GetPreviousSecretExpiresMs(); ms != 0 {
					f.add("Previous secret", "still signs until "+when(ms, a.env.Now()))
				} else {
					f.add("Previous secret", "no longer signs")
				}
				return f.flush()
			})
		},
	}
	cmd.Flags().StringVar(&secret, "signing-secret", "", "the new secret, 16 to 1024 bytes (default: 32 random bytes)")
	cmd.Flags().Var(&overlap, "overlap", "how long the old secret still signs (default 24h)")
	return cmd
}

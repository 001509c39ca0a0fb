package boomtool

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) clientCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Register, deregister and list clients (admin)",
	}
	cmd.AddCommand(a.clientRegisterCommand(), a.clientDeregisterCommand(), a.clientListCommand())
	return cmd
}

// clientSpec is the flags of "client register".
type clientSpec struct {
	password, callback, pool, mode, backoff, secret string
	admin                                           bool
	cbTimeout, initial, maxInterval, retention      durationFlag
	attempts, dlqMax                                uint32
	multiplier, jitter                              float64
}

func (s *clientSpec) request(id string) (*boomerangv1.RegisterClientRequest, bool, error) {
	mode, err := parseMode(s.mode)
	if err != nil {
		return nil, false, err
	}
	cb, err := parseCallback(s.callback, s.cbTimeout.d, s.pool)
	if err != nil {
		return nil, false, err
	}
	req := &boomerangv1.RegisterClientRequest{
		ClientId: id, Password: s.password, Admin: s.admin, Callback: cb, DefaultMode: mode,
		SigningSecret: []byte(s.secret),
	}
	generated := false
	if req.Password == "" {
		req.Password, generated = newPassword(), true
	}
	retry := &boomerangv1.RetryPolicy{
		InitialIntervalMs: s.initial.d.Milliseconds(), MaxIntervalMs: s.maxInterval.d.Milliseconds(),
		MaxAttempts: s.attempts, Multiplier: s.multiplier, Jitter: s.jitter,
	}
	switch s.backoff {
	case "":
	case "fixed":
		retry.Backoff = boomerangv1.Backoff_BACKOFF_FIXED
	case "exponential":
		retry.Backoff = boomerangv1.Backoff_BACKOFF_EXPONENTIAL
	default:
		return nil, false, usagef("bad --backoff %q: want fixed or exponential", s.backoff)
	}
	if retry.Backoff != 0 || retry.InitialIntervalMs != 0 || retry.MaxIntervalMs != 0 || retry.MaxAttempts != 0 || retry.Multiplier != 0 || retry.Jitter != 0 {
		req.Retry = retry
	}
	if s.dlqMax != 0 || s.retention.set {
		req.DeadLetters = &boomerangv1.DeadLetterPolicy{MaxEntries: s.dlqMax, RetentionMs: s.retention.d.Milliseconds()}
	}
	return req, generated, nil
}

// newPassword makes a password of 128 random bits.
func newPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (a *app) clientRegisterCommand() *cobra.Command {
	var s clientSpec
	cmd := &cobra.Command{
		Use:   "register ID",
		Short: "Register a client (admin)",
		Long: `Register a client: its id and password, where its tasks are delivered, and
its retry and dead letter policies. Without --password one is generated and
printed once. The webhook signing secret is printed once too.`,
		Example: `  boomtool client register billing --callback http://127.0.0.1:8080/hooks
  boomtool client register ledger --password 's3cret-pass' --callback grpc://10.0.0.5:9000 \
      --max-attempts 10 --backoff exponential --retry-initial 1s --retry-max 5m`,
		Args: exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, generated, err := s.request(args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.RegisterClient(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return a.writeRegisteredJSON(resp, req.Password, generated)
				}
				fmt.Fprintf(a.env.Stdout, "Registered client %s.\n", resp.GetClient().GetId())
				f := newFields(a.env.Stdout)
				if generated {
					f.add("Password", req.Password+"   (generated; shown only now)")
				}
				if len(resp.GetSigningSecret()) > 0 {
					f.add("Signing secret", hex.EncodeToString(resp.GetSigningSecret())+"   (hex; shown only now)")
				}
				f.add("Callback", callbackString(resp.GetClient().GetCallback()))
				return f.flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.password, "new-password", "", "the new client's password, at least 8 characters (default: generated and printed)")
	f.BoolVar(&s.admin, "admin", false, "make it an admin")
	f.StringVar(&s.callback, "callback", "", "where its tasks are delivered: http(s)://…, grpc://, tcp:// or udp://host:port")
	f.Var(&s.cbTimeout, "callback-timeout", "per-attempt delivery timeout (default: the server's)")
	f.StringVar(&s.pool, "pool", "", "dispatch pool for its deliveries")
	f.StringVar(&s.mode, "mode", "", "default dispatch mode: next-on-error, block-on-error or immediate")
	f.StringVar(&s.backoff, "backoff", "", "retry backoff: fixed or exponential")
	f.Var(&s.initial, "retry-initial", "first retry interval")
	f.Var(&s.maxInterval, "retry-max", "longest retry interval")
	f.Float64Var(&s.multiplier, "retry-multiplier", 0, "exponential backoff multiplier (default 2)")
	f.Float64Var(&s.jitter, "retry-jitter", 0, "retry jitter, 0 to 1")
	f.Uint32Var(&s.attempts, "max-attempts", 0, "delivery attempts before dead-lettering (default: the server's)")
	f.Uint32Var(&s.dlqMax, "dlq-max", 0, "most dead letters kept (0: unbounded)")
	f.Var(&s.retention, "dlq-retention", "how long dead letters are kept (default: until deleted)")
	f.StringVar(&s.secret, "signing-secret", "", "webhook signing secret (default: generated)")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(modeNames, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("backoff", cobra.FixedCompletions([]string{"fixed", "exponential"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// writeRegisteredJSON prints the response, plus the generated password
// when there is one, which only the tool knows.
func (a *app) writeRegisteredJSON(resp *boomerangv1.RegisterClientResponse, password string, generated bool) error {
	if !generated {
		return writeJSON(a.env.Stdout, resp)
	}
	var buf jsonBuffer
	if err := writeJSON(&buf, resp); err != nil {
		return err
	}
	return writeMergedJSON(a.env.Stdout, buf.Bytes(), "generatedPassword", password)
}

func (a *app) clientDeregisterCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "deregister ID",
		Short:   "Remove a client (admin); it must have no tasks left",
		Example: "  boomtool client deregister billing",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.DeregisterClient(ctx, &boomerangv1.DeregisterClientRequest{ClientId: args[0]})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Deregistered client %s.\n", args[0])
				return nil
			})
		},
	}
}

func (a *app) clientListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List clients (admin)",
		Example: "  boomtool client list",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListClients(ctx, &boomerangv1.ListClientsRequest{})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				t := newTable(a.env.Stdout, "ID", "ADMIN", "CALLBACK", "MODE", "CREATED")
				now := a.env.Now()
				for _, cl := range resp.GetClients() {
					t.row(cl.GetId(), strconv.FormatBool(cl.GetAdmin()), dash(callbackString(cl.GetCallback())),
						modeWord(cl.GetDefaultMode()), relative(time.UnixMilli(cl.GetCreatedMs()), now))
				}
				return t.flush()
			})
		},
	}
}

// modeWord names a dispatch mode; unspecified is the server's default.
func modeWord(m boomerangv1.DispatchMode) string {
	if m == boomerangv1.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		return "default"
	}
	return enumWord(m.String(), "DISPATCH_MODE_")
}

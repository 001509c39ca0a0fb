package boomtool

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) clientCommand() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:   "client",
		Short: "Register, show, change and list clients",
		Long: `Client administration. Registering, changing and deregistering clients is for
admins; a client may show itself, change its password and rotate its signing
secret; read-only clients may show and list every client.`,
	})
	cmd.AddCommand(a.clientRegisterCommand(), a.clientDeregisterCommand(), a.clientListCommand(), a.clientShowCommand(),
		a.clientUpdateCommand(), a.clientPasswdCommand(), a.clientRotateCommand())
	return cmd
}

// settings are the flags a client's registration and update share.
type settings struct {
	callback, pool, mode, backoff, role  string
	noCallback                           bool
	cbTimeout, initial, maxInterval, ret durationFlag
	attempts, dlqMax, groupLimit         uint32
	multiplier, jitter                   float64
	allow, deny                          []string
	rates                                rateFlags
}

func (s *settings) register(f *pflag.FlagSet) {
	f.StringVar(&s.callback, "callback", "", "where its tasks are delivered: http(s)://…, grpc://, tcp:// or udp://host:port")
	f.Var(&s.cbTimeout, "callback-timeout", "per-attempt delivery timeout (default: the server's)")
	f.StringVar(&s.pool, "pool", "", "dispatch pool for its deliveries")
	f.StringVar(&s.mode, "mode", "", "default dispatch mode: next-on-error, block-on-error or immediate")
	f.StringVar(&s.role, "role", "", "client, admin or read-only (sees everything, changes nothing)")
	f.StringVar(&s.backoff, "backoff", "", "retry backoff: fixed or exponential")
	f.Var(&s.initial, "retry-initial", "first retry interval")
	f.Var(&s.maxInterval, "retry-max", "longest retry interval")
	f.Float64Var(&s.multiplier, "retry-multiplier", 0, "exponential backoff multiplier (default 2)")
	f.Float64Var(&s.jitter, "retry-jitter", 0, "retry jitter, 0 to 1")
	f.Uint32Var(&s.attempts, "max-attempts", 0, "delivery attempts before dead-lettering (default: the server's)")
	f.Uint32Var(&s.dlqMax, "dlq-max", 0, "most dead letters kept (0: unbounded)")
	f.Var(&s.ret, "dlq-retention", "how long dead letters are kept (default: until deleted)")
	f.Uint32Var(&s.groupLimit, "group-limit", 0, "tasks one of its groups may hold (0: the server's default)")
	f.StringArrayVar(&s.allow, "callback-allow", nil, "its callbacks may only go here: a network, address or host pattern (*.example.com); repeatable")
	f.StringArrayVar(&s.deny, "callback-deny", nil, "its callbacks may not go here; repeatable")
	s.rates.register(f)
}

func completeSettings(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(modeNames, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("backoff", cobra.FixedCompletions([]string{"fixed", "exponential"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"client", "admin", "read-only"}, cobra.ShellCompDirectiveNoFileComp))
}

func (s *settings) retry() (*boomerangv1.RetryPolicy, error) {
	r := &boomerangv1.RetryPolicy{
		InitialIntervalMs: s.initial.d.Milliseconds(), MaxIntervalMs: s.maxInterval.d.Milliseconds(),
		MaxAttempts: s.attempts, Multiplier: s.multiplier, Jitter: s.jitter,
	}
	switch s.backoff {
	case "":
	case "fixed":
		r.Backoff = boomerangv1.Backoff_BACKOFF_FIXED
	case "exponential":
		r.Backoff = boomerangv1.Backoff_BACKOFF_EXPONENTIAL
	default:
		return nil, usagef("bad --backoff %q: want fixed or exponential", s.backoff)
	}
	return r, nil
}

func parseRole(s string) (boomerangv1.Role, error) {
	switch s {
	case "":
		return boomerangv1.Role_ROLE_UNSPECIFIED, nil
	case "client":
		return boomerangv1.Role_ROLE_CLIENT, nil
	case "admin":
		return boomerangv1.Role_ROLE_ADMIN, nil
	case "read-only":
		return boomerangv1.Role_ROLE_READ_ONLY, nil
	}
	return 0, usagef("bad role %q: want client, admin or read-only", s)
}

func (s *settings) rules() *boomerangv1.CallbackRules {
	if len(s.allow) == 0 && len(s.deny) == 0 {
		return nil
	}
	return &boomerangv1.CallbackRules{Allow: s.allow, Deny: s.deny}
}

// registration is "client register": the settings, a password and a
// secret.
type registration struct {
	settings
	password, secret string
	admin            bool
}

func (s *registration) request(id string) (*boomerangv1.RegisterClientRequest, bool, error) {
	mode, err := parseMode(s.mode)
	if err != nil {
		return nil, false, err
	}
	role, err := parseRole(s.role)
	if err != nil {
		return nil, false, err
	}
	cb, err := parseCallback(s.callback, s.cbTimeout.d, s.pool)
	if err != nil {
		return nil, false, err
	}
	retry, err := s.retry()
	if err != nil {
		return nil, false, err
	}
	rate, rates, err := s.rates.limits()
	if err != nil {
		return nil, false, err
	}
	req := &boomerangv1.RegisterClientRequest{
		ClientId: id, Password: s.password, Admin: s.admin, Role: role, Callback: cb, DefaultMode: mode,
		SigningSecret: []byte(s.secret), CallbackRules: s.rules(), GroupLimit: s.groupLimit,
		GroupRateLimit: rate, GroupRateLimits: rates,
	}
	generated := false
	if req.Password == "" {
		req.Password, generated = newPassword(), true
	}
	if retry.Backoff != 0 || retry.InitialIntervalMs != 0 || retry.MaxIntervalMs != 0 || retry.MaxAttempts != 0 || retry.Multiplier != 0 || retry.Jitter != 0 {
		req.Retry = retry
	}
	if s.dlqMax != 0 || s.ret.set {
		req.DeadLetters = &boomerangv1.DeadLetterPolicy{MaxEntries: s.dlqMax, RetentionMs: s.ret.d.Milliseconds()}
	}
	return req, generated, nil
}

// newPassword makes a password of 128 random bits.
func newPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secretString shows a signing secret the way it is used: as text when
// it is printable text (a secret given as text), else as hex.
func secretString(b []byte) string {
	if utf8.Valid(b) && strings.IndexFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' }) < 0 {
		return string(b) + "   (text; shown only now)"
	}
	return hex.EncodeToString(b) + "   (hex; shown only now)"
}

func (a *app) clientRegisterCommand() *cobra.Command {
	var s registration
	cmd := &cobra.Command{
		Use:   "register ID",
		Short: "Register a client (admin)",
		Long: `Register a client: its id and password, its role, where its tasks are
delivered, and its retry and dead letter policies. Without --new-password one
is generated and printed once. A generated webhook signing secret is printed
once too, in hex; one given with --signing-secret is echoed as given.`,
		Example: `  boomtool client register billing --callback http://127.0.0.1:8080/hooks
  boomtool client register ledger --new-password 's3cret-pass' --callback grpc://10.0.0.5:9000 \
      --max-attempts 10 --backoff exponential --retry-initial 1s --retry-max 5m
  boomtool client register ops --role read-only`,
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
					f.add("Signing secret", secretString(resp.GetSigningSecret()))
				}
				f.add("Role", roleWord(resp.GetClient().GetRole()))
				f.add("Callback", callbackString(resp.GetClient().GetCallback()))
				return f.flush()
			})
		},
	}
	f := cmd.Flags()
	s.settings.register(f)
	f.StringVar(&s.password, "new-password", "", "the new client's password, at least 8 characters (default: generated and printed)")
	f.BoolVar(&s.admin, "admin", false, "make it an admin (same as --role admin)")
	f.StringVar(&s.secret, "signing-secret", "", "webhook signing secret, 16 to 1024 bytes (default: 32 random bytes)")
	completeSettings(cmd)
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
		Short:   "List clients (admin, read-only)",
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
				t := newTable(a.env.Stdout, "ID", "ROLE", "CALLBACK", "MODE", "CREATED")
				now := a.env.Now()
				for _, cl := range resp.GetClients() {
					t.row(cl.GetId(), roleWord(cl.GetRole()), dash(callbackString(cl.GetCallback())),
						modeWord(cl.GetDefaultMode()), relative(time.UnixMilli(cl.GetCreatedMs()), now))
				}
				return t.flush()
			})
		},
	}
}

func (a *app) clientShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "show [ID]",
		Aliases: []string{"get"},
		Short:   "Show a client's settings (default: your own)",
		Example: "  boomtool client show\n  boomtool client show billing",
		Args:    maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetClient(ctx, &boomerangv1.GetClientRequest{ClientId: id})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				return a.writeClient(resp.GetClient())
			})
		},
	}
}

func (a *app) writeClient(cl *boomerangv1.ClientConfig) error {
	now := a.env.Now()
	f := newFields(a.env.Stdout)
	f.add("ID", cl.GetId())
	f.add("Role", roleWord(cl.GetRole()))
	f.add("Callback", callbackString(cl.GetCallback()))
	f.add("Default mode", modeWord(cl.GetDefaultMode()))
	f.add("Retry", retryString(cl.GetRetry()))
	if n := cl.GetGroupLimit(); n > 0 {
		f.add("Group limit", fmt.Sprintf("%d tasks", n))
	}
	f.add("Group rate", rateString(cl.GetGroupRateLimit()))
	f.add("Group rates", groupRatesString(cl.GetGroupRateLimits()))
	if dl := cl.GetDeadLetters(); dl != nil {
		f.add("Dead letters", deadLetterString(dl))
	}
	f.add("Callback allow", strings.Join(cl.GetCallbackRules().GetAllow(), ", "))
	f.add("Callback deny", strings.Join(cl.GetCallbackRules().GetDeny(), ", "))
	if ms := cl.GetPreviousSecretExpiresMs(); ms != 0 {
		f.add("Previous secret", "still signs until "+when(ms, now))
	}
	f.add("Created", when(cl.GetCreatedMs(), now))
	return f.flush()
}

func deadLetterString(p *boomerangv1.DeadLetterPolicy) string {
	parts := []string{"at most " + strconv.FormatUint(uint64(p.GetMaxEntries()), 10)}
	if p.GetMaxEntries() == 0 {
		parts[0] = "unbounded"
	}
	if p.GetRetentionMs() > 0 {
		parts = append(parts, "kept "+humanDuration(time.Duration(p.GetRetentionMs())*time.Millisecond))
	}
	return strings.Join(parts, ", ")
}

// modeWord names a dispatch mode; unspecified is the server's default.
func modeWord(m boomerangv1.DispatchMode) string {
	if m == boomerangv1.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		return "default"
	}
	return enumWord(m.String(), "DISPATCH_MODE_")
}

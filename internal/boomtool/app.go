package boomtool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/boomerangd/boomerang/client"
)

// Defaults of the global flags.
const (
	// DefaultAddr is the server's TCP address unless --addr,
	// BOOMERANG_ADDR or a saved session says otherwise.
	DefaultAddr = "127.0.0.1:7070"
	// DefaultTimeout bounds one command's work with the server.
	DefaultTimeout = 10 * time.Second
)

// Environment variables read for credentials, the address and TLS.
const (
	EnvAddr     = "BOOMERANG_ADDR"
	EnvClient   = "BOOMERANG_CLIENT"
	EnvPassword = "BOOMERANG_PASSWORD"
	EnvCA       = "BOOMERANG_CA"
)

// Env is everything the tool takes from its surroundings, so tests can
// run it in-process.
type Env struct {
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	Getenv    func(string) string
	ConfigDir func() (string, error) // where boomerang/session.json lives
	Now       func() time.Time
}

// OSEnv is the process's real environment.
func OSEnv() Env {
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, ConfigDir: os.UserConfigDir, Now: time.Now,
	}
}

// Main runs the tool with args (without the program name) and returns the
// exit code: 0 on success, 1 when the operation failed, 2 for a usage
// error.
func Main(args []string, env Env) int {
	a := &app{env: env}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(env.Stderr, "boomtool: "+describe(err, a))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// app holds the global flags and the connection of one run.
type app struct {
	env      Env
	addr     string
	clientID string
	password string
	output   string
	timeout  time.Duration
	tls      tlsFlags

	saved *savedSession // the session the connection uses, if from the file
	conn  *client.Client
}

// usageError is a mistake in the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "boomtool",
		Short: "Command-line client for the Boomerang task scheduler",
		Long: `boomtool schedules and inspects tasks, dead letters, groups and clients on a
Boomerang server over its TCP protocol.

Credentials come from --client and --password, or BOOMERANG_CLIENT and
BOOMERANG_PASSWORD, or else from the session saved by "boomtool login".`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	parent(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.addr, "addr", "", "server TCP address HOST:PORT (default $"+EnvAddr+", the saved session's, or "+DefaultAddr+")")
	pf.StringVar(&a.clientID, "client", "", "client id to log in as (default $"+EnvClient+")")
	pf.StringVar(&a.password, "password", "", "password (default $"+EnvPassword+")")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	pf.DurationVar(&a.timeout, "timeout", DefaultTimeout, "how long to wait for the server")
	a.tls.register(pf)
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		switch {
		case a.output != "table" && a.output != "json":
			return usagef("--output must be table or json, not %q", a.output)
		case a.timeout <= 0:
			return usagef("--timeout must be positive, got %v", a.timeout)
		}
		return nil
	}
	root.AddCommand(
		a.loginCommand(), a.logoutCommand(), a.sessionCommand(),
		a.setCommand(), a.updateCommand(), a.deleteCommand(), a.deleteAllCommand(), a.showCommand(), a.listCommand(), a.nextCommand(),
		a.dlqCommand(), a.groupCommand(), a.clientCommand(), a.infoCommand(), a.benchCommand(),
		a.attemptsCommand(), a.completedCommand(), a.auditCommand(), a.clusterCommand(),
	)
	return root
}

// parent makes cmd, a command that only groups others, print its help
// when called alone and refuse an unknown subcommand as a usage error,
// with suggestions.
func parent(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError{errors.New(msg)}
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}

// credentials returns the credentials from the flags or the environment,
// if any.
func (a *app) credentials() (client.Credentials, error) {
	id, pw := first(a.clientID, a.env.Getenv(EnvClient)), first(a.password, a.env.Getenv(EnvPassword))
	switch {
	case id == "" && pw == "":
		return client.Credentials{}, nil
	case id == "":
		return client.Credentials{}, usagef("a password was given but no client id: use --client or %s", EnvClient)
	case pw == "":
		return client.Credentials{}, usagef("no password for client %q: use --password or %s", id, EnvPassword)
	}
	return client.Credentials{ClientID: id, Password: pw}, nil
}

// serverAddr picks the address: --addr, then BOOMERANG_ADDR, then the
// saved session's, then DefaultAddr.
func (a *app) serverAddr(saved *savedSession) string {
	if addr := first(a.addr, a.env.Getenv(EnvAddr)); addr != "" {
		return addr
	}
	if saved != nil {
		return saved.Addr
	}
	return DefaultAddr
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// context bounds a command's work by --timeout.
func (a *app) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), a.timeout)
}

// connect dials the server with credentials, or else with the saved
// session.
func (a *app) connect(ctx context.Context) (*client.Client, error) {
	creds, err := a.credentials()
	if err != nil {
		return nil, err
	}
	saved, err := a.loadSession()
	if err != nil {
		return nil, err
	}
	addr := a.serverAddr(saved)
	opts, err := a.dialOptions(saved)
	if err != nil {
		return nil, err
	}
	if creds.ClientID == "" {
		switch {
		case saved == nil:
			return nil, errNotLoggedIn
		case saved.Addr != addr:
			return nil, fmt.Errorf("%w: the saved session is for %s, not %s", errNotLoggedIn, saved.Addr, addr)
		case !saved.ExpiresAt.IsZero() && !a.env.Now().Before(saved.ExpiresAt):
			return nil, fmt.Errorf("%w (at %s)", errSavedExpired, saved.ExpiresAt.UTC().Format(time.RFC3339))
		}
		opts = append(opts, client.WithSession(saved.session()))
		a.saved = saved
	}
	c, err := client.Dial(ctx, addr, creds, opts...)
	if err != nil {
		return nil, err
	}
	a.conn = c
	return c, nil
}

// close closes the connection, saving a session the client refreshed.
func (a *app) close() {
	if a.conn == nil {
		return
	}
	if a.saved != nil {
		if s := a.conn.Session(); s.ID != a.saved.SessionID {
			_ = a.saveSession(a.saved.with(s))
		}
	}
	a.conn.Close()
	a.conn = nil
}

// run connects, runs fn, and closes the connection.
func (a *app) run(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := a.context(cmd)
	defer cancel()
	c, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer a.close()
	return fn(ctx, c)
}

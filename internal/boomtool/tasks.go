package boomtool

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func (a *app) setCommand() *cobra.Command {
	var (
		spec        taskSpec
		payloadFile string
		tasksFile   string
	)
	cmd := &cobra.Command{
		Use:   "set [PAYLOAD]",
		Short: "Schedule a task, or every task of a file",
		Long: `Schedule a task: its payload is delivered to the client's callback when due.
Without --delay or --at it is due now; --every repeats it, or --cron on a
calendar schedule read in the time zone --tz (the first occurrence at or
after the due time). A task needs a payload, unless --empty says an empty
one is meant.

With --file, schedule every task of a file (- for standard input) instead:
one JSON object per line, with the fields of the flags (see docs/cli.md).`,
		Example: `  boomtool set 'invoice 42' --delay 90s
  boomtool set 'report' --at 2026-12-01T10:00:00Z --every 24h --group reports
  boomtool set --payload-file order.bin --group customer-7 --key order-1001
  boomtool set --empty --every 1m --group heartbeat
  boomtool set 'daily report' --cron '0 9 * * MON-FRI' --tz Europe/Zurich
  boomtool set 'reindex' --replace reindex --debounce 30s --max-wait 5m
  boomtool set --file tasks.jsonl`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tasksFile != "" {
				if err := onlyFlag(cmd, "file", args); err != nil {
					return err
				}
				return a.setFromFile(cmd, tasksFile)
			}
			payload, given, err := readPayload(args, payloadFile, a.env.Stdin)
			if err != nil {
				return err
			}
			spec.payload, spec.given = payload, given
			opts, err := spec.options()
			if err != nil {
				return err
			}
			req := &boomerangv1.RegisterTaskRequest{Payload: payload}
			for _, opt := range opts {
				opt(req)
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.RegisterTask(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintln(a.env.Stdout, a.scheduled(resp.GetTask(), resp.GetCreated())+".")
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.Var(&spec.delay, "delay", "due after this long, e.g. 90s, 5m, 1h30m, 2d")
	f.Var(&spec.at, "at", "due at this time (RFC 3339), e.g. 2026-12-01T10:00:00Z")
	f.Var(&spec.every, "every", "repeat at this interval after each due time, e.g. 5m")
	f.StringVar(&spec.cron, "cron", "", "repeat on this cron schedule: minute hour day month weekday, seconds first optional, e.g. '0 9 * * MON-FRI'")
	f.StringVar(&spec.tz, "tz", "", "IANA time zone of --cron, e.g. Europe/Zurich (default UTC)")
	f.StringVar(&payloadFile, "payload-file", "", "read the payload from this file (- for standard input)")
	f.StringVar(&spec.group, "group", "", "group key: a group's tasks are delivered in order, one at a time")
	f.StringVar(&spec.key, "key", "", "idempotency key: a repeat with the same key returns the existing task")
	f.StringVar(&spec.replace, "replace", "", "replace key: replaces the waiting task with this key (payload and due time) instead of adding one")
	f.Var(&spec.debounce, "debounce", "with --replace: due this long after the latest registration with the key")
	f.Var(&spec.maxWait, "max-wait", "with --debounce: due at most this long after the first registration with the key")
	f.StringVar(&spec.mode, "mode", "", "dispatch mode: next-on-error, block-on-error or immediate (default: the client's)")
	f.StringVar(&spec.callback, "callback", "", "deliver to this callback instead of the client's: http(s)://…, grpc://, tcp:// or udp://host:port")
	f.Var(&spec.cbTimeout, "callback-timeout", "per-attempt timeout of --callback")
	f.StringVar(&spec.pool, "pool", "", "dispatch pool of --callback")
	f.Uint32Var(&spec.maxAttempts, "max-attempts", 0, "delivery attempts before the task goes to the dead letter queue (default: the client's)")
	f.BoolVar(&spec.empty, "empty", false, "schedule the task with an empty payload")
	f.StringVar(&tasksFile, "file", "", "schedule every task of this file of JSON lines (- for standard input)")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(modeNames, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// scheduled says what a registration did: "Scheduled task 42, due …".
func (a *app) scheduled(t *boomerangv1.Task, created bool) string {
	if !created && t.GetReplaceKey() != "" {
		return fmt.Sprintf("Replaced waiting task %d with replace key %q; due %s", t.GetId(), t.GetReplaceKey(), when(t.GetFireAtMs(), a.env.Now()))
	}
	if !created {
		return fmt.Sprintf("Task %d already exists with idempotency key %q; due %s", t.GetId(), t.GetIdempotencyKey(), when(t.GetFireAtMs(), a.env.Now()))
	}
	return fmt.Sprintf("Scheduled task %d, due %s", t.GetId(), when(t.GetFireAtMs(), a.env.Now()))
}

// taskSpec is one task as set takes it: from its flags, or from a line
// of --file.
type taskSpec struct {
	payload                 []byte
	given, empty            bool
	delay, every, cbTimeout durationFlag
	debounce, maxWait       durationFlag
	at                      timeFlag
	group, key, mode        string
	cron, tz, replace       string
	callback, pool          string
	maxAttempts             uint32
	inFile                  bool // from --file: errors name JSON fields, not flags
}

// name is how an error names one of the spec's fields: as a flag, or as
// a JSON field of --file.
func (s *taskSpec) name(flag string) string {
	if s.inFile {
		return strconv.Quote(flag)
	}
	return "--" + flag
}

// options checks the spec and returns the Schedule options it means.
func (s *taskSpec) options() ([]client.ScheduleOption, error) {
	empty, given := "--empty", "as an argument or with --payload-file"
	if s.inFile {
		empty, given = `"empty": true`, `as "payload" or "payload-base64"`
	}
	switch {
	case s.empty && len(s.payload) > 0:
		return nil, usagef("%s with a payload: give one or the other", empty)
	case !s.empty && !s.given:
		return nil, usagef("no payload: give it %s, or pass %s for an empty task", given, empty)
	case !s.empty && len(s.payload) == 0:
		return nil, usagef("the payload is empty: pass %s if an empty task is meant", empty)
	case s.delay.set && s.at.set:
		return nil, usagef("give %s or %s, not both", s.name("delay"), s.name("at"))
	case s.cron != "" && s.every.d != 0:
		return nil, usagef("give %s or %s, not both", s.name("every"), s.name("cron"))
	case s.tz != "" && s.cron == "":
		return nil, usagef("%s needs %s", s.name("tz"), s.name("cron"))
	case s.debounce.set && s.replace == "":
		return nil, usagef("%s needs %s", s.name("debounce"), s.name("replace"))
	case s.maxWait.set && !s.debounce.set:
		return nil, usagef("%s needs %s", s.name("max-wait"), s.name("debounce"))
	}
	m, err := parseMode(s.mode)
	if err != nil {
		return nil, err
	}
	cb, err := parseCallback(s.callback, s.cbTimeout.d, s.pool)
	if err != nil {
		return nil, err
	}
	opts := []client.ScheduleOption{
		client.Every(s.every.d), client.InGroup(s.group), client.WithIdempotencyKey(s.key), client.WithMode(m),
	}
	switch {
	case s.delay.set:
		opts = append(opts, client.After(s.delay.d))
	case s.at.set:
		opts = append(opts, client.At(s.at.t))
	}
	if s.cron != "" {
		opts = append(opts, client.Cron(s.cron, s.tz))
	}
	if s.replace != "" {
		opts = append(opts, client.Replacing(s.replace))
	}
	if s.debounce.set {
		opts = append(opts, client.Debounce(s.debounce.d, s.maxWait.d))
	}
	if cb != nil {
		opts = append(opts, client.WithCallback(cb))
	}
	if s.maxAttempts > 0 {
		opts = append(opts, client.WithRetry(&boomerangv1.RetryPolicy{MaxAttempts: s.maxAttempts}))
	}
	return opts, nil
}

func (a *app) updateCommand() *cobra.Command {
	var (
		delay, repeat  durationFlag
		at             timeFlag
		payload, file  string
		cron, tz       string
		payloadChanged bool
	)
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a task's payload, due time, repeat interval or cron schedule",
		Example: `  boomtool update 42 --delay 10m
  boomtool update 42 --payload 'invoice 42, second reminder' --every 0s
  boomtool update 42 --cron '0 8 * * MON-FRI' --tz Europe/Zurich`,
		Args: exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("task", args[0])
			if err != nil {
				return err
			}
			payloadChanged = cmd.Flags().Changed("payload")
			req := &boomerangv1.UpdateTaskRequest{Id: id}
			var p []string
			if payloadChanged {
				p = []string{payload}
			}
			body, ok, err := readPayload(p, file, a.env.Stdin)
			if err != nil {
				return err
			}
			if ok {
				req.Payload = body
				if req.Payload == nil {
					req.Payload = []byte{}
				}
			}
			switch {
			case delay.set && at.set:
				return usagef("give --delay or --at, not both")
			case delay.set:
				req.When = &boomerangv1.UpdateTaskRequest_DelayMs{DelayMs: delay.d.Milliseconds()}
			case at.set:
				req.When = &boomerangv1.UpdateTaskRequest_FireAtMs{FireAtMs: at.t.UnixMilli()}
			}
			if repeat.set {
				ms := repeat.d.Milliseconds()
				req.RepeatIntervalMs = &ms
			}
			cronSet := cmd.Flags().Changed("cron")
			switch {
			case cronSet && repeat.set:
				return usagef("give --every or --cron, not both")
			case tz != "" && !cronSet:
				return usagef("--tz needs --cron")
			case cronSet:
				req.Cron, req.TimeZone = &cron, tz
			}
			if !ok && req.When == nil && !repeat.set && !cronSet {
				return usagef("nothing to change: give --payload, --payload-file, --delay, --at, --every or --cron")
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.UpdateTask(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				t := resp.GetTask()
				fmt.Fprintf(a.env.Stdout, "Updated task %d: due %s, %s.\n", t.GetId(), when(t.GetFireAtMs(), a.env.Now()), repeats(t))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&payload, "payload", "", "new payload")
	f.StringVar(&file, "payload-file", "", "read the new payload from this file (- for standard input)")
	f.Var(&delay, "delay", "due this long from now")
	f.Var(&at, "at", "due at this time (RFC 3339)")
	f.Var(&repeat, "every", "new repeat interval; 0s makes it a one-shot task")
	f.StringVar(&cron, "cron", "", "new cron schedule, from its first occurrence at or after the due time or now; '' makes it a one-shot task")
	f.StringVar(&tz, "tz", "", "IANA time zone of --cron (default UTC)")
	return cmd
}

func (a *app) deleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Aliases: []string{"cancel", "rm"},
		Short:   "Cancel a task",
		Long:    "Cancel a task. A task whose delivery is under way cannot be cancelled (conflict).",
		Example: "  boomtool delete 42",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("task", args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.CancelTask(ctx, &boomerangv1.CancelTaskRequest{Id: id})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				fmt.Fprintf(a.env.Stdout, "Deleted task %d.\n", id)
				return nil
			})
		},
	}
}

func (a *app) showCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Aliases: []string{"get"},
		Short:   "Show a task",
		Example: "  boomtool show 42",
		Args:    exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("task", args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id})
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				return writeTask(a.env.Stdout, resp.GetTask(), a.env.Now())
			})
		},
	}
}

// repeats prints how a task repeats: its cron schedule and zone, "every
// 5m", or "once".
func repeats(t *boomerangv1.Task) string {
	if t.GetCron() == "" {
		return every(t.GetRepeatIntervalMs())
	}
	return fmt.Sprintf("cron %q in %s", t.GetCron(), cmp.Or(t.GetTimeZone(), "UTC"))
}

// upcoming prints a cron task's next occurrences in its time zone, where
// its schedule is read.
func upcoming(t *boomerangv1.Task) string {
	loc, err := time.LoadLocation(t.GetTimeZone())
	if err != nil {
		loc = time.UTC
	}
	var out []string
	for _, ms := range t.GetNextFireAtMs() {
		out = append(out, time.UnixMilli(ms).In(loc).Format("Mon 2006-01-02 15:04:05 MST"))
	}
	return strings.Join(out, ", ")
}

// writeTask prints every set field of a task.
func writeTask(w io.Writer, t *boomerangv1.Task, now time.Time) error {
	f := newFields(w)
	f.add("ID", strconv.FormatUint(t.GetId(), 10))
	f.add("Client", t.GetClient())
	f.add("Group", t.GetGroup())
	if t.GetStatus() != boomerangv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
		f.add("Status", statusWord(t))
	}
	f.add("Due", when(t.GetFireAtMs(), now))
	f.add("Repeat", repeats(t))
	f.add("Then", upcoming(t))
	f.add("Mode", enumWord(t.GetMode().String(), "DISPATCH_MODE_"))
	f.add("Payload", payloadPreview(t.GetPayload(), 200))
	f.add("Attempts", strconv.FormatUint(uint64(t.GetAttempts()), 10))
	f.add("Next attempt", when(t.GetNextAttemptMs(), now))
	f.add("Last error", t.GetLastError())
	f.add("Fired", times(t.GetFires()))
	f.add("Idempotency key", t.GetIdempotencyKey())
	f.add("Replace key", t.GetReplaceKey())
	f.add("Callback", callbackString(t.GetCallback()))
	f.add("Retry", retryString(t.GetRetry()))
	f.add("Created", when(t.GetCreatedMs(), now))
	f.add("Updated", when(t.GetUpdatedMs(), now))
	return f.flush()
}

func retryString(r *boomerangv1.RetryPolicy) string {
	if r == nil {
		return ""
	}
	var parts []string
	if r.GetBackoff() != boomerangv1.Backoff_BACKOFF_UNSPECIFIED {
		parts = append(parts, enumWord(r.GetBackoff().String(), "BACKOFF_"))
	}
	if r.GetInitialIntervalMs() > 0 {
		parts = append(parts, "from "+humanDuration(time.Duration(r.GetInitialIntervalMs())*time.Millisecond))
	}
	if r.GetMaxIntervalMs() > 0 {
		parts = append(parts, "up to "+humanDuration(time.Duration(r.GetMaxIntervalMs())*time.Millisecond))
	}
	if r.GetMaxAttempts() > 0 {
		parts = append(parts, fmt.Sprintf("%d attempts", r.GetMaxAttempts()))
	}
	return strings.Join(parts, ", ")
}

// statusWord names a task's status for people; a blocked task says what
// blocks it.
func statusWord(t *boomerangv1.Task) string {
	if t.GetStatus() == boomerangv1.TaskStatus_TASK_STATUS_BLOCKED {
		return fmt.Sprintf("blocked by dead letter %d", t.GetBlockedByDeadLetter())
	}
	return enumWord(t.GetStatus().String(), "TASK_STATUS_")
}

// times says how often: "never", "1 time", "3 times".
func times(n uint64) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "1 time"
	}
	return strconv.FormatUint(n, 10) + " times"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// exactArgs wants n arguments, named by what in the message.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			if n == 0 {
				return usagef("this command takes no arguments, got %q", args)
			}
			return usagef("want %s, got %d arguments", what, len(args))
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return usagef("want at most %d arguments, got %d (quote a payload with spaces)", n, len(args))
		}
		return nil
	}
}

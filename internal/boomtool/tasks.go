package boomtool

import (
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
		delay, repeat, cbTimeout durationFlag
		at                       timeFlag
		file, group, key, mode   string
		callback, pool           string
		maxAttempts              uint32
		empty                    bool
	)
	cmd := &cobra.Command{
		Use:   "set [PAYLOAD]",
		Short: "Schedule a task",
		Long: `Schedule a task: its payload is delivered to the client's callback when due.
Without --delay or --at it is due now; --every repeats it. A task needs a
payload, unless --empty says an empty one is meant.`,
		Example: `  boomtool set 'invoice 42' --delay 90s
  boomtool set 'report' --at 2026-12-01T10:00:00Z --every 24h --group reports
  boomtool set --payload-file order.bin --group customer-7 --key order-1001
  boomtool set --empty --every 1m --group heartbeat`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			payload, given, err := readPayload(args, file, a.env.Stdin)
			if err != nil {
				return err
			}
			switch {
			case empty && len(payload) > 0:
				return usagef("--empty with a payload: give one or the other")
			case !empty && !given:
				return usagef("no payload: give it as an argument or with --payload-file, or pass --empty for an empty task")
			case !empty && len(payload) == 0:
				return usagef("the payload is empty: pass --empty if an empty task is meant")
			}
			m, err := parseMode(mode)
			if err != nil {
				return err
			}
			cb, err := parseCallback(callback, cbTimeout.d, pool)
			if err != nil {
				return err
			}
			if delay.set && at.set {
				return usagef("give --delay or --at, not both")
			}
			req := &boomerangv1.RegisterTaskRequest{
				Payload: payload, RepeatIntervalMs: repeat.d.Milliseconds(), Group: group,
				Mode: m, Callback: cb, IdempotencyKey: key,
			}
			switch {
			case delay.set:
				req.When = &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: delay.d.Milliseconds()}
			case at.set:
				req.When = &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: at.t.UnixMilli()}
			}
			if maxAttempts > 0 {
				req.Retry = &boomerangv1.RetryPolicy{MaxAttempts: maxAttempts}
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.RegisterTask(ctx, req)
				if err != nil {
					return err
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, resp)
				}
				t := resp.GetTask()
				if !resp.GetCreated() {
					fmt.Fprintf(a.env.Stdout, "Task %d already exists with idempotency key %q; due %s.\n", t.GetId(), key, when(t.GetFireAtMs(), a.env.Now()))
					return nil
				}
				fmt.Fprintf(a.env.Stdout, "Scheduled task %d, due %s.\n", t.GetId(), when(t.GetFireAtMs(), a.env.Now()))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.Var(&delay, "delay", "due after this long, e.g. 90s, 5m, 1h30m, 2d")
	f.Var(&at, "at", "due at this time (RFC 3339), e.g. 2026-12-01T10:00:00Z")
	f.Var(&repeat, "every", "repeat at this interval after each due time, e.g. 5m")
	f.StringVar(&file, "payload-file", "", "read the payload from this file (- for standard input)")
	f.StringVar(&group, "group", "", "group key: a group's tasks are delivered in order, one at a time")
	f.StringVar(&key, "key", "", "idempotency key: a repeat with the same key returns the existing task")
	f.StringVar(&mode, "mode", "", "dispatch mode: next-on-error, block-on-error or immediate (default: the client's)")
	f.StringVar(&callback, "callback", "", "deliver to this callback instead of the client's: http(s)://…, grpc://, tcp:// or udp://host:port")
	f.Var(&cbTimeout, "callback-timeout", "per-attempt timeout of --callback")
	f.StringVar(&pool, "pool", "", "dispatch pool of --callback")
	f.Uint32Var(&maxAttempts, "max-attempts", 0, "delivery attempts before the task goes to the dead letter queue (default: the client's)")
	f.BoolVar(&empty, "empty", false, "schedule the task with an empty payload")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(modeNames, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) updateCommand() *cobra.Command {
	var (
		delay, repeat  durationFlag
		at             timeFlag
		payload, file  string
		payloadChanged bool
	)
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a task's payload, due time or repeat interval",
		Example: `  boomtool update 42 --delay 10m
  boomtool update 42 --payload 'invoice 42, second reminder' --every 0s`,
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
			if !ok && req.When == nil && !repeat.set {
				return usagef("nothing to change: give --payload, --payload-file, --delay, --at or --every")
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
				fmt.Fprintf(a.env.Stdout, "Updated task %d: due %s, %s.\n", t.GetId(), when(t.GetFireAtMs(), a.env.Now()), every(t.GetRepeatIntervalMs()))
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
	f.add("Repeat", every(t.GetRepeatIntervalMs()))
	f.add("Mode", enumWord(t.GetMode().String(), "DISPATCH_MODE_"))
	f.add("Payload", payloadPreview(t.GetPayload(), 200))
	f.add("Attempts", strconv.FormatUint(uint64(t.GetAttempts()), 10))
	f.add("Next attempt", when(t.GetNextAttemptMs(), now))
	f.add("Last error", t.GetLastError())
	f.add("Fired", times(t.GetFires()))
	f.add("Idempotency key", t.GetIdempotencyKey())
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

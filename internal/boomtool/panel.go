package boomtool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// The commands behind the web panel's views: groups, attempts, completed
// tasks, the audit log and bulk replay of dead letters.

func (a *app) groupListCommand(of *string) *cobra.Command {
	var req boomerangv1.ListGroupsRequest
	cmd := &cobra.Command{
		Use: "list", Short: "List groups, blocked ones first", Args: exactArgs(0, ""),
		Example: "  boomtool group list --blocked",
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Client = *of
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListGroups(ctx, &req)
				if err != nil || a.output == "json" {
					return jsonOr(a, resp, err)
				}
				if len(resp.GetGroups()) == 0 {
					fmt.Fprintln(a.env.Stdout, "No groups.")
					return nil
				}
				t := newTable(a.env.Stdout, "CLIENT", "GROUP", "TASKS", "BLOCKED", "DEAD LETTER", "ERROR")
				for _, s := range resp.GetGroups() {
					g, blocked := s.GetGroup(), "no"
					if g.GetBlocked() {
						blocked = when(g.GetBlockedSinceMs(), a.env.Now())
					}
					t.row(g.GetClient(), g.GetGroup(), strconv.FormatUint(g.GetTasks(), 10), blocked,
						idOrDash(s.GetBlocking().GetId()), s.GetBlocking().GetLastError())
				}
				return t.flush()
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&req.BlockedOnly, "blocked", false, "only blocked groups")
	f.StringVar(&req.GroupContains, "contains", "", "only groups whose key contains this text")
	f.Uint32Var(&req.Limit, "limit", 0, "at most this many (default 200, at most 1000)")
	return cmd
}

func (a *app) attemptsCommand() *cobra.Command {
	return &cobra.Command{
		Use: "attempts ID", Short: "Show a task's delivery attempts the server remembers", Args: exactArgs(1, "ID"),
		Example: "  boomtool attempts 8444249301319681",
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("task", args[0])
			if err != nil {
				return err
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetTaskAttempts(ctx, &boomerangv1.GetTaskAttemptsRequest{Id: id})
				if err != nil || a.output == "json" {
					return jsonOr(a, resp, err)
				}
				return a.writeAttempts(resp.GetAttempts())
			})
		},
	}
}

func (a *app) writeAttempts(attempts []*boomerangv1.Attempt) error {
	if len(attempts) == 0 {
		fmt.Fprintln(a.env.Stdout, "No attempts remembered.")
		return nil
	}
	t := newTable(a.env.Stdout, "ATTEMPT", "STARTED", "DURATION", "PROTOCOL", "OUTCOME", "ERROR")
	for _, at := range attempts {
		outcome := "delivered"
		switch {
		case at.GetRunning():
			outcome = "running"
		case !at.GetOk():
			outcome = "failed"
		}
		took := time.Duration(at.GetDurationMs() * float64(time.Millisecond))
		t.row(strconv.FormatUint(uint64(at.GetAttempt()), 10), when(at.GetStartedMs(), a.env.Now()), took.Round(time.Microsecond).String(),
			enumWord(at.GetProtocol().String(), "PROTOCOL_"), outcome, at.GetError())
	}
	return t.flush()
}

func (a *app) completedCommand() *cobra.Command {
	var req boomerangv1.ListCompletedRequest
	cmd := &cobra.Command{
		Use:   "completed",
		Short: "List recently delivered and dead-lettered tasks, newest first",
		Long: `List the occurrences that were delivered or dead-lettered within the
server's completed window (--completed-window, default 1h), newest first,
with their attempts in JSON output.`,
		Example: "  boomtool completed --group order-17\n  boomtool completed --failed -o json",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListCompleted(ctx, &req)
				if err != nil || a.output == "json" {
					return jsonOr(a, resp, err)
				}
				if len(resp.GetTasks()) == 0 {
					fmt.Fprintln(a.env.Stdout, "Nothing completed in the window.")
					return nil
				}
				t := newTable(a.env.Stdout, "FINISHED", "TASK", "CLIENT", "GROUP", "OUTCOME", "ATTEMPTS")
				for _, ct := range resp.GetTasks() {
					outcome := "delivered"
					if !ct.GetDelivered() {
						outcome = fmt.Sprintf("dead letter %d: %s", ct.GetDeadLetterId(), ct.GetError())
					}
					t.row(when(ct.GetFinishedMs(), a.env.Now()), strconv.FormatUint(ct.GetTask().GetId(), 10), ct.GetTask().GetClient(),
						ct.GetTask().GetGroup(), outcome, strconv.Itoa(len(ct.GetAttempts())))
				}
				return t.flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Client, "client", "", "whose (admin and read-only; default: yours, theirs: all)")
	f.StringVar(&req.Group, "group", "", "only this group's")
	f.Uint64Var(&req.TaskId, "task", 0, "only this task's")
	f.BoolVar(&req.FailedOnly, "failed", false, "only dead-lettered ones")
	f.Uint32Var(&req.PageSize, "limit", 0, "at most this many (default 100, at most 1000)")
	return cmd
}

func (a *app) auditCommand() *cobra.Command {
	var req boomerangv1.ListAuditLogRequest
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List operator actions, newest first",
		Long: `List the operator actions the server remembers, newest first: who
unblocked, skipped, replayed, deleted, cancelled or updated what, when,
and whether it worked. The log is kept in memory and starts empty at
every server start.`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListAuditLog(ctx, &req)
				if err != nil || a.output == "json" {
					return jsonOr(a, resp, err)
				}
				if len(resp.GetEntries()) == 0 {
					fmt.Fprintln(a.env.Stdout, "No operator actions.")
					return nil
				}
				t := newTable(a.env.Stdout, "WHEN", "WHO", "ACTION", "CLIENT", "TARGET", "RESULT", "DETAIL")
				for _, e := range resp.GetEntries() {
					t.row(when(e.GetAtMs(), a.env.Now()), e.GetActor(), e.GetAction(), e.GetClient(), e.GetTarget(),
						statusWords(e.GetStatus()), e.GetDetail())
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().Uint32Var(&req.Limit, "limit", 0, "at most this many (default 100, at most 1000)")
	return cmd
}

func (a *app) dlqReplayAllCommand() *cobra.Command {
	var (
		req    boomerangv1.BulkDeadLettersRequest
		before timeFlag
	)
	cmd := &cobra.Command{
		Use:   "replay-all",
		Short: "Replay every dead letter matching a filter",
		Long: `Replay every dead letter matching the filter, a batch at a time: a
client's (yours; an admin may name another, or leave it out for all), of
a group, failed before a time, whose error or payload contains a text.
--dry-run only counts.`,
		Example: "  boomtool dlq replay-all --error 'HTTP 503' --dry-run\n  boomtool dlq replay-all --group order-17",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Action = boomerangv1.BulkAction_BULK_ACTION_REPLAY
			if before.set {
				req.FailedBeforeMs = before.t.UnixMilli()
			}
			return a.run(cmd, func(ctx context.Context, c *client.Client) error {
				total := &boomerangv1.BulkDeadLettersResponse{}
				for {
					resp, err := c.BulkDeadLetters(ctx, &req)
					if err != nil {
						return err
					}
					total.Matched += resp.GetMatched()
					total.Done += resp.GetDone()
					total.Skipped += resp.GetSkipped()
					total.LastId, total.More = resp.GetLastId(), resp.GetMore()
					if resp.GetLastError() != "" {
						total.LastError = resp.GetLastError()
					}
					if req.DryRun || !resp.GetMore() {
						break
					}
					req.AfterId = resp.GetLastId()
				}
				if a.output == "json" {
					return writeJSON(a.env.Stdout, total)
				}
				if req.DryRun {
					fmt.Fprintf(a.env.Stdout, "Would replay %d matching dead letters.\n", total.GetMatched())
					return nil
				}
				fmt.Fprintf(a.env.Stdout, "Replayed %d of %d matching dead letters; %d were refused.\n", total.GetDone(), total.GetMatched(), total.GetSkipped())
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Client, "client", "", "whose dead letters (admin only; default: yours, an admin's: all)")
	f.StringVar(&req.Group, "group", "", "only this group's")
	f.Var(&before, "before", "only those that failed before this time (RFC 3339)")
	f.StringVar(&req.ErrorContains, "error", "", "only those whose last error contains this text")
	f.BytesBase64Var(&req.PayloadContains, "payload-base64", nil, "only those whose payload contains these bytes (base64)")
	f.BoolVar(&req.DryRun, "dry-run", false, "count, change nothing")
	return cmd
}

// jsonOr returns err, or writes resp as JSON.
func jsonOr(a *app, resp proto.Message, err error) error {
	if err != nil {
		return err
	}
	return writeJSON(a.env.Stdout, resp)
}

func idOrDash(id uint64) string {
	if id == 0 {
		return "-"
	}
	return strconv.FormatUint(id, 10)
}

package boomtool

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// DefaultScan bounds the tasks read to sort a list by due or creation
// time.
const DefaultScan = 10000

// listing is what list and next are asked.
type listing struct {
	q              boomerangv1.ListTasksRequest
	status         string
	recurring, one bool
	all            bool
	from, to       timeFlag
	sort           string
	scan           int
}

func (l *listing) flags(cmd *cobra.Command, limit uint32) {
	f := cmd.Flags()
	f.StringVar(&l.q.Client, "of", "", "admin and read-only: this client's tasks (default: your own; theirs: everyone's)")
	f.StringVar(&l.q.Group, "group", "", "only this group")
	f.StringVar(&l.status, "status", "", "only scheduled or retrying tasks")
	f.BoolVar(&l.recurring, "recurring", false, "only recurring tasks")
	f.BoolVar(&l.one, "one-shot", false, "only one-shot tasks")
	f.Var(&l.from, "due-from", "only tasks due at or after this time (RFC 3339)")
	f.Var(&l.to, "due-to", "only tasks due before this time (RFC 3339)")
	f.Uint32Var(&l.q.PageSize, "limit", limit, "tasks to show (at most 1000 a page with --sort id)")
	f.BoolVar(&l.all, "all", false, "show every task")
	f.IntVar(&l.scan, "scan", DefaultScan, "--sort due or created: read at most this many tasks to sort")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"scheduled", "retrying"}, cobra.ShellCompDirectiveNoFileComp))
}

// request completes the query from the flags.
func (l *listing) request() error {
	switch l.status {
	case "":
	case "scheduled":
		l.q.Status = boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED
	case "retrying":
		l.q.Status = boomerangv1.TaskStatus_TASK_STATUS_RETRYING
	default:
		return usagef("bad --status %q: want scheduled or retrying", l.status)
	}
	switch {
	case l.recurring && l.one:
		return usagef("give --recurring or --one-shot, not both")
	case l.recurring || l.one:
		l.q.Recurring = &l.recurring
	}
	switch {
	case l.sort != "due" && l.sort != "id" && l.sort != "created":
		return usagef("bad --sort %q: want due, id or created", l.sort)
	case l.sort != "id" && l.q.PageToken != 0:
		return usagef("--page-token pages through --sort id only")
	case l.scan < 1:
		return usagef("--scan must be positive, got %d", l.scan)
	}
	if l.from.set {
		l.q.DueFromMs = l.from.t.UnixMilli()
	}
	if l.to.set {
		l.q.DueToMs = l.to.t.UnixMilli()
	}
	return nil
}

func (a *app) listCommand() *cobra.Command {
	var l listing
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List tasks",
		Long: `List tasks, by default in due order, soonest first: what fires next comes
first. --sort id lists in id order a page at a time (--limit, then
--page-token from the last line); --sort due and --sort created read up to
--scan tasks, sort them and show the first --limit (all with --all).`,
		Example: `  boomtool list
  boomtool list --group customer-7 --status retrying
  boomtool list --sort id --recurring --all -o json`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runListing(cmd, &l) },
	}
	l.flags(cmd, 100)
	cmd.Flags().StringVar(&l.sort, "sort", "due", "order: due (soonest first), id or created (oldest first)")
	cmd.Flags().Uint64Var(&l.q.PageToken, "page-token", 0, "--sort id: continue from this page token")
	_ = cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions([]string{"due", "id", "created"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) nextCommand() *cobra.Command {
	l := listing{sort: "due"}
	cmd := &cobra.Command{
		Use:   "next",
		Short: "Show the tasks that fire next",
		Long: `Show the tasks due soonest, overdue ones first: "list --sort due" with ten
lines by default.`,
		Example: "  boomtool next\n  boomtool next --group customer-7 --limit 3",
		Args:    exactArgs(0, ""),
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runListing(cmd, &l) },
	}
	l.flags(cmd, 10)
	return cmd
}

func (a *app) runListing(cmd *cobra.Command, l *listing) error {
	if err := l.request(); err != nil {
		return err
	}
	return a.run(cmd, func(ctx context.Context, c *client.Client) error {
		var resp *boomerangv1.ListTasksResponse
		var more, scanned int
		var err error
		if l.sort == "id" {
			resp, err = listTasks(ctx, c, &l.q, l.all)
		} else {
			resp, more, scanned, err = sortedTasks(ctx, c, l)
		}
		if err != nil {
			return err
		}
		if a.output == "json" {
			return writeJSON(a.env.Stdout, resp)
		}
		if err := a.writeTaskTable(resp); err != nil {
			return err
		}
		if more > 0 {
			fmt.Fprintf(a.env.Stdout, "%d more task%s: raise --limit, or use --all.\n", more, plural(more))
		}
		if scanned >= l.scan {
			fmt.Fprintf(a.env.Stdout, "Sorted the first %d tasks by id only: narrow the list (--group, --due-to) or raise --scan.\n", scanned)
		}
		return nil
	})
}

// sortedTasks reads up to l.scan tasks, sorts them by due or creation
// time, and keeps the first l.q.PageSize unless l.all. It returns how
// many it left out and how many it read.
func sortedTasks(ctx context.Context, c *client.Client, l *listing) (*boomerangv1.ListTasksResponse, int, int, error) {
	q := &boomerangv1.ListTasksRequest{
		Client: l.q.Client, Group: l.q.Group, DueFromMs: l.q.DueFromMs, DueToMs: l.q.DueToMs,
		Recurring: l.q.Recurring, Status: l.q.Status, PageSize: uint32(min(l.scan, 1000)),
	}
	var tasks []*boomerangv1.Task
	for t, err := range c.Tasks(ctx, q) {
		if err != nil {
			return nil, 0, 0, err
		}
		tasks = append(tasks, t)
		if len(tasks) >= l.scan {
			break
		}
	}
	key := (*boomerangv1.Task).GetFireAtMs
	if l.sort == "created" {
		key = (*boomerangv1.Task).GetCreatedMs
	}
	slices.SortStableFunc(tasks, func(x, y *boomerangv1.Task) int {
		return cmp.Or(cmp.Compare(key(x), key(y)), cmp.Compare(x.GetId(), y.GetId()))
	})
	scanned, more := len(tasks), 0
	if n := int(l.q.PageSize); !l.all && n > 0 && len(tasks) > n {
		more, tasks = len(tasks)-n, tasks[:n]
	}
	return &boomerangv1.ListTasksResponse{Tasks: tasks}, more, scanned, nil
}

// listTasks fetches one page, or with all every page into one response.
func listTasks(ctx context.Context, c *client.Client, q *boomerangv1.ListTasksRequest, all bool) (*boomerangv1.ListTasksResponse, error) {
	if !all {
		return c.ListTasks(ctx, q)
	}
	out := &boomerangv1.ListTasksResponse{}
	for t, err := range c.Tasks(ctx, q) {
		if err != nil {
			return nil, err
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}

func (a *app) writeTaskTable(resp *boomerangv1.ListTasksResponse) error {
	now := a.env.Now()
	if len(resp.GetTasks()) == 0 {
		fmt.Fprintln(a.env.Stdout, "No tasks.")
		return nil
	}
	t := newTable(a.env.Stdout, "ID", "CLIENT", "GROUP", "DUE", "REPEAT", "STATUS", "ATTEMPTS", "PAYLOAD")
	for _, task := range resp.GetTasks() {
		t.row(strconv.FormatUint(task.GetId(), 10), task.GetClient(), dash(task.GetGroup()),
			relative(time.UnixMilli(task.GetFireAtMs()), now), repeats(task),
			statusWord(task), strconv.FormatUint(uint64(task.GetAttempts()), 10),
			payloadPreview(task.GetPayload(), 40))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if next := resp.GetNextPageToken(); next != 0 {
		fmt.Fprintf(a.env.Stdout, "More tasks: add --page-token %d, or use --all.\n", next)
	}
	return nil
}

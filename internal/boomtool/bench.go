package boomtool

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/boomload"
)

func (a *app) benchCommand() *cobra.Command {
	var cfg boomload.Config
	var duration durationFlag
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure durable registrations per second and their ack latency",
		Long: `Register tasks as fast as the server acknowledges them, over --conns
connections with --depth requests in flight on each, and report
acknowledged registrations per second and p50/p99/p99.9 ack latency.
Each request registers one task, or with --batch N a batch of N tasks in
one RegisterTasks request (latency is then per batch).
The tasks are due --delay later (a day by default) and stay on the server
afterwards, in groups named bench-<n>. Ctrl-C ends the run early.
Needs --client and --password (or the environment variables).`,
		Example: `  boomtool bench --client bench --password "$PW" --duration 10s
  boomtool bench --conns 8 --depth 512 --payload 1024 --count 1000000 -o json
  boomtool bench --conns 4 --depth 16 --batch 100 --duration 10s`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			creds, err := a.credentials()
			if err != nil {
				return err
			}
			if cfg.Batch < 1 || cfg.Batch > client.MaxBatch {
				return usagef("--batch must be between 1 and %d, got %d", client.MaxBatch, cfg.Batch)
			}
			if creds.ClientID == "" {
				return usagef("bench logs in on every connection: give --client and --password (or %s and %s)", EnvClient, EnvPassword)
			}
			saved, _ := a.loadSession()
			cfg.Addr, cfg.Credentials, cfg.Duration = a.serverAddr(saved), creds, duration.d
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := boomload.Run(context.WithoutCancel(ctx), cfg)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return rep.WriteJSON(a.env.Stdout)
			}
			return rep.WriteText(a.env.Stdout)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Conns, "conns", boomload.DefaultConns, "connections")
	f.IntVar(&cfg.Depth, "depth", boomload.DefaultDepth, "requests in flight per connection")
	f.IntVar(&cfg.Batch, "batch", 1, "tasks per request: 1 sends RegisterTask, more a RegisterTasks batch (at most 1000)")
	f.IntVar(&cfg.PayloadSize, "payload", boomload.DefaultPayloadSize, "payload size in bytes")
	f.Var(&duration, "duration", "run this long (default 10s unless --count)")
	f.IntVar(&cfg.Count, "count", 0, "run this many registrations instead of a duration")
	f.IntVar(&cfg.Warmup, "warmup", 0, "registrations before measuring starts")
	f.DurationVar(&cfg.Delay, "delay", boomload.DefaultDelay, "how far ahead the tasks are due")
	f.IntVar(&cfg.Groups, "groups", boomload.DefaultGroups, "spread tasks over this many groups (-1: no groups)")
	return cmd
}

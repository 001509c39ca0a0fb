// Command minioms is the Mini-OMS demo server: it takes orders over TCP,
// runs each account's orders in order and one at a time through validate,
// risk and a simulated execution, and answers every order with one ACK or
// REJ. See docs/minioms.md.
//
//	minioms -listen 127.0.0.1:7090 -exec-min 10ms -exec-max 20ms
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/boomerangd/boomerang/internal/oms"
)

func main() {
	var cfg oms.Config
	cfg.RegisterFlags(flag.CommandLine)
	verbose := flag.Bool("v", false, "log debug lines (per connection, never per order)")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err := run(cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "minioms:", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM, then drains.
func run(cfg oms.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := oms.New(cfg, log)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("shutting down: answering accepted orders")
	return srv.Stop()
}

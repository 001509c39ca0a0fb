package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/boomerangd/boomerang/internal/server"
)

// serve runs the server until SIGINT or SIGTERM, then shuts it down
// gracefully within the shutdown timeout. A second signal during the
// shutdown ends the process at once.
func serve(ctx context.Context, o *options, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Every file the server creates is its user's alone: the data
	// directory holds password hashes and sealed signing secrets.
	restrictNewFiles()
	log := newLogger(o, stderr)
	cfg := o.cfg
	cfg.Logger = log
	cfg.Version = buildVersion()
	ob, err := newOutbox(o, log)
	if err != nil {
		return err
	}
	if ob != nil {
		cfg.OnFinished = ob.Finished
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	etcd, err := embedEtcd(o, stderr)
	if err != nil {
		return err
	}
	if etcd != nil {
		defer etcd.Close() // after the server has left the cluster
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	if ob != nil {
		if err := ob.Start(ctx, srv.Scheduler(), srv.Registerer()); err != nil {
			return errors.Join(err, srv.Stop(context.Background()))
		}
	}
	if pw := srv.BootstrapPassword(); pw != "" {
		printAdminPassword(stderr, cfg.AdminID, pw)
	}
	<-ctx.Done()
	stop() // a second signal now ends the process
	log.Info("shutting down: finishing requests and deliveries under way", "timeout", o.shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	err = srv.Stop(sctx)
	return errors.Join(err, stopOutbox(sctx, ob))
}

// printAdminPassword shows a generated admin password, the only time it
// is ever shown.
func printAdminPassword(w io.Writer, id, password string) {
	fmt.Fprintf(w, "\n*** boomerang: created admin client %q with generated password: %s\n"+
		"*** Store it now: it is shown only this once (set --admin-password or BOOMERANG_ADMIN_PASSWORD to choose one).\n\n", id, password)
}

func newLogger(o *options, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[o.logLevel], ReplaceAttr: readableDurations}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// readableDurations logs durations as "1.5s" rather than a count of
// nanoseconds, which the JSON handler would print.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

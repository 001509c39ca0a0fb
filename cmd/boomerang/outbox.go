package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/boomerangd/boomerang/internal/outbox"
)

// nodeFile keeps the outbox node name of a data directory: the rows a
// node QUEUED are its own across restarts, since their tasks live in its
// store.
const nodeFile = "outbox-node"

// outboxNode is --outbox-node, or the name kept in the data directory,
// made on first use.
func outboxNode(o *options) (string, error) {
	if o.outboxNode != "" {
		return o.outboxNode, nil
	}
	path := filepath.Join(o.cfg.DataDir, nodeFile)
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	name := strings.Trim(host+"-"+hex.EncodeToString(b[:]), "-")
	if err := os.MkdirAll(o.cfg.DataDir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping the outbox node name: %w", err)
	}
	return name, nil
}

// newOutbox builds the configured outbox sources, or returns nil when
// there are none.
func newOutbox(o *options, log *slog.Logger) (*outbox.Outbox, error) {
	if len(o.outbox) == 0 {
		return nil, nil
	}
	node, err := outboxNode(o)
	if err != nil {
		return nil, err
	}
	return outbox.New(o.outbox, outbox.Options{Node: node, Logger: log.With("component", "outbox")})
}

// newOutboxCommand is "boomerang outbox": tools for outbox sources.
func newOutboxCommand(stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "outbox", Short: "PostgreSQL outbox sources (see docs/outbox.md)"}
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create the outbox table (or add the outbox's columns to an existing one), its trigger and indexes, and the lease tables",
		Long: "For each source given with --outbox-source (or in the --config file), init creates its table when it\n" +
			"does not exist, or adds the columns the outbox keeps its bookkeeping in; then the notify trigger, the\n" +
			"partial indexes the polls use, and the lease and node tables. It is safe to run again. --print shows\n" +
			"the SQL instead of running it.",
		Args: cobra.NoArgs,
	}
	o := newOptions()
	o.register(initCmd.Flags())
	only := initCmd.Flags().String("source", "", "only this source")
	printSQL := initCmd.Flags().Bool("print", false, "print the SQL (for a new table) instead of running it")
	initCmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := o.complete(cmd.Flags(), os.LookupEnv); err != nil {
			return err
		}
		if len(o.outbox) == 0 {
			return errors.New("no outbox source configured: give --outbox-source or an outbox-source list in --config")
		}
		out := cmd.OutOrStdout()
		found := false
		for _, src := range o.outbox {
			if *only != "" && src.Name != *only {
				continue
			}
			found = true
			if *printSQL {
				stmts, err := outbox.InitSQL(src, false)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "-- source %s\n%s;\n\n", src.Name, strings.Join(stmts, ";\n\n"))
				continue
			}
			if err := outbox.Init(cmd.Context(), src); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "outbox source %s: ready\n", src.Name)
		}
		if !found {
			return fmt.Errorf("no outbox source named %q", *only)
		}
		return nil
	}
	cmd.AddCommand(initCmd)
	return cmd
}

// stopOutbox stops the outbox after the server, so that the outcomes of
// the deliveries the server finished while stopping are written too.
func stopOutbox(ctx context.Context, ob *outbox.Outbox) error {
	if ob == nil {
		return nil
	}
	return ob.Stop(ctx)
}

// Command omsload drives a Mini-OMS server (cmd/minioms) with one of its
// scenarios, checks every answer, and reports counts, violations,
// throughput and latency. It exits 1 if any answer broke the protocol's
// promises (order per account, exactly one answer, the right answer).
//
//	omsload -addr 127.0.0.1:7090 -scenario many-families -rate 50000 -duration 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/boomerangd/boomerang/internal/omsload"
)

func main() {
	var cfg omsload.Config
	cfg.RegisterFlags(flag.CommandLine)
	asJSON := flag.Bool("json", false, "print the report as one JSON object")
	flag.Parse()

	// Ctrl-C stops sending; the answers still due are awaited and checked.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	report, err := omsload.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "omsload:", err)
		os.Exit(2)
	}
	if *asJSON {
		err = report.WriteJSON(os.Stdout)
	} else {
		err = report.WriteText(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "omsload:", err)
		os.Exit(2)
	}
	if report.Violations() > 0 {
		os.Exit(1)
	}
}

// Command boomerang is the Boomerang server: a durable, ordered task
// scheduler that delivers each task back to its client when it is due.
//
//	boomerang                      # serve with the defaults
//	boomerang serve --config boomerang.yaml --tcp-addr 0.0.0.0:7070
//	boomerang version
//
// Every flag can also be set by the environment variable BOOMERANG_ plus
// the flag's name in upper snake case (BOOMERANG_TCP_ADDR), or by the key
// of the same name in the YAML file given by --config. Flags win over the
// environment, which wins over the file. See docs/server.md.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target when GOGC is not
// set. The server's live Go heap is small (the store's memtables and
// block cache are allocated outside it), and most of what it allocates
// lives for one request, so collecting at 5 times the live heap instead
// of twice it costs little memory and saves a sixth of the CPU under
// load (docs/benchmarks.md, "Round three").
const defaultGCPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if err := newRootCommand(os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "boomerang:", err)
		os.Exit(1)
	}
}

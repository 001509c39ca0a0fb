// Command boomtool is the command-line client of the Boomerang task
// scheduler: it schedules and inspects tasks, dead letters, groups and
// clients, keeps a login session, and measures throughput (boomtool bench).
// See docs/cli.md.
package main

import (
	"os"

	"github.com/boomerangd/boomerang/internal/boomtool"
)

func main() { os.Exit(boomtool.Main(os.Args[1:], boomtool.OSEnv())) }

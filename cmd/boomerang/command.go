package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version is used when there is one.
var version = "dev"

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}

// newRootCommand builds the command tree. The root command serves, like
// "serve", so that "boomerang" alone starts a server.
func newRootCommand(stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "boomerang",
		Short:         "Boomerang: a durable, ordered task scheduler",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	bindServe(root, stderr)
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the server (the default)",
		Args:  cobra.NoArgs,
	}
	bindServe(serve, stderr)
	root.AddCommand(serve, newOutboxCommand(stderr), newEtcdCommand(stderr), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "boomerang", buildVersion())
		},
	})
	return root
}

// bindServe gives cmd the server's flags and makes it run the server.
func bindServe(cmd *cobra.Command, stderr io.Writer) {
	o := newOptions()
	o.register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := o.complete(cmd.Flags(), os.LookupEnv); err != nil {
			return err
		}
		return serve(cmd.Context(), o, stderr)
	}
}

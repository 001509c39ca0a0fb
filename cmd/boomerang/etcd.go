package main

import (
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/boomerangd/boomerang/internal/cluster"
)

const (
	defaultEtcdClientAddr = "127.0.0.1:2379"
	defaultEtcdPeerAddr   = "127.0.0.1:2380"
)

// newEtcdCommand runs an embedded single-member etcd: enough for a
// cluster on one machine, tests and small deployments.
func newEtcdCommand(stderr io.Writer) *cobra.Command {
	var dir, clientAddr, peerAddr string
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run an embedded single-member etcd for a cluster's coordination",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restrictNewFiles()
			log := newLogger(&options{logLevel: "info", logFormat: "text"}, stderr)
			e, err := cluster.Embed(cluster.EmbedConfig{Dir: dir, ClientAddr: clientAddr, PeerAddr: peerAddr, Logger: log})
			if err != nil {
				return err
			}
			defer e.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			select {
			case <-ctx.Done():
				return nil
			case err := <-e.Err():
				return err
			}
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "data-dir", "./boomerang-etcd", "directory of etcd's data; created if missing")
	fs.StringVar(&clientAddr, "client-addr", defaultEtcdClientAddr, "address etcd serves clients at (the nodes' --etcd)")
	fs.StringVar(&peerAddr, "peer-addr", defaultEtcdPeerAddr, "etcd's peer address")
	return cmd
}

// embedEtcd starts the embedded etcd of serve --embed-etcd, if asked. Its
// data lives beside the store's, not in it: the store's directory holds
// only the store.
func embedEtcd(o *options, stderr io.Writer) (*cluster.Embedded, error) {
	if !o.embedEtcd {
		return nil, nil
	}
	dir := o.etcdDataDir
	if dir == "" {
		dir = filepath.Clean(o.cfg.DataDir) + "-etcd"
	}
	return cluster.Embed(cluster.EmbedConfig{
		Dir: dir, ClientAddr: o.cluster.Etcd[0], PeerAddr: o.etcdPeerAddr,
		Logger: newLogger(o, stderr).With("component", "etcd"),
	})
}

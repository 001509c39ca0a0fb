package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EmbedConfig configures an embedded single-member etcd, for laptops,
// tests and small deployments.
type EmbedConfig struct {
	// Dir holds etcd's data. Required.
	Dir string
	// ClientAddr is where clients reach it (host:port; port 0 picks one).
	// Default 127.0.0.1:2379.
	ClientAddr string
	// PeerAddr is its peer port, which a single member only listens on.
	// Default 127.0.0.1:2380.
	PeerAddr string
	// Logger receives its readiness. Default: discard.
	Logger *slog.Logger
}

// Embedded is a running embedded etcd.
type Embedded struct {
	e         *embed.Etcd
	closeOnce sync.Once
}

// Embed starts an embedded etcd and waits until it serves.
func Embed(cfg EmbedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, errors.New("cluster: EmbedConfig.Dir is required")
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = "127.0.0.1:2379"
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = "127.0.0.1:2380"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ec := embed.NewConfig()
	ec.Dir = cfg.Dir
	ec.Name = "boomerang"
	client := url.URL{Scheme: "http", Host: cfg.ClientAddr}
	peer := url.URL{Scheme: "http", Host: cfg.PeerAddr}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, errors.New("cluster: embedded etcd not ready after a minute")
	}
	cfg.Logger.Info("embedded etcd serving", "clients", e.Clients[0].Addr().String(), "data", cfg.Dir)
	return &Embedded{e: e}, nil
}

// ClientAddr returns the address clients reach it at.
func (e *Embedded) ClientAddr() string { return e.e.Clients[0].Addr().String() }

// Err delivers a fatal error of the server.
func (e *Embedded) Err() <-chan error { return e.e.Err() }

// Close stops it; it may be called more than once.
func (e *Embedded) Close() { e.closeOnce.Do(e.e.Close) }

package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/replica"
)

// DefaultClusterAddr is the replication listen address of a cluster node.
const DefaultClusterAddr = "127.0.0.1:7072"

// ClusterConfig joins the server to a cluster.
type ClusterConfig struct {
	// Name names the cluster; its keys in etcd live under
	// /boomerang/<Name>/. Required.
	Name string
	// NodeID is this node's id in the cluster, above 0 and unique.
	// Required. A standalone data directory is node 1's.
	NodeID uint64
	// Etcd are the etcd endpoints (host:port). Required.
	Etcd []string
	// Addr is the replication listen address. Default 127.0.0.1:7072.
	Addr string
	// Advertise is the replication address the other nodes reach this one
	// at; its host is also advertised with this node's TCP and HTTP ports.
	// Default Addr.
	Advertise string
	// Zone, when set, spreads each shard's replicas over zones.
	Zone string
	// ReplicationFactor and DeadTimeout: see cluster.Config. Defaults 3
	// and 1 minute.
	ReplicationFactor int
	DeadTimeout       time.Duration
}

func (c *ClusterConfig) validate() error {
	if c == nil {
		return nil
	}
	if c.Addr == "" {
		c.Addr = DefaultClusterAddr
	}
	if c.Advertise == "" {
		c.Advertise = c.Addr
	}
	switch {
	case c.Name == "":
		return errors.New("server: the cluster needs a name")
	case c.NodeID == 0:
		return errors.New("server: a cluster node needs an id above 0")
	case len(c.Etcd) == 0:
		return errors.New("server: a cluster node needs etcd endpoints")
	}
	host, port, err := net.SplitHostPort(c.Advertise)
	if ip := net.ParseIP(host); err != nil || host == "" || port == "0" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("server: cluster advertise address %q: want the host:port other nodes reach this one at (set --advertise)", c.Advertise)
	}
	return nil
}

// clusterNode is what a cluster node runs besides a standalone one.
type clusterNode struct {
	tr     *replica.TCPTransport
	etcd   *clientv3.Client
	member *cluster.Member
}

// prepareCluster listens on the replication address and connects to
// etcd (lazily: etcd may come later).
func (s *Server) prepareCluster() error {
	c := s.cfg.Cluster
	tr, err := replica.NewTCPTransport(replica.TCPConfig{
		ID: c.NodeID, Cluster: c.Name, Addr: c.Addr, Logger: s.log.With("component", "transport"),
	})
	if err != nil {
		return fmt.Errorf("server: replication listener: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		_ = tr.Close()
		return fmt.Errorf("server: etcd client: %w", err)
	}
	s.cl = &clusterNode{tr: tr, etcd: cli}
	return nil
}

// joinCluster starts replication and the node's membership, once the
// scheduler and the listeners run.
func (s *Server) joinCluster() error {
	c := s.cfg.Cluster
	if err := s.cl.tr.Start(s.sched.Node()); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(c.Advertise)
	m, err := cluster.New(cluster.Config{
		Cluster: c.Name, Etcd: s.cl.etcd, Shards: s.st.Shards(), System: true, Local: s.sched.Node(), Peers: s.cl.tr,
		Node: cluster.NodeInfo{
			ID: c.NodeID, Raft: c.Advertise, Zone: c.Zone,
			TCP: withHost(host, s.TCPAddr()), HTTP: withHost(host, s.HTTPAddr()),
		},
		ReplicationFactor: c.ReplicationFactor, DeadTimeout: c.DeadTimeout,
		Logger: s.log.With("component", "cluster"),
	})
	if err != nil {
		return err
	}
	s.cl.member = m
	m.Start()
	scheme := "http"
	if s.cfg.TLS != nil {
		scheme = "https"
	}
	s.svc.fwd.Store(&forwarder{member: m, http: s.forwardClient(), scheme: scheme, key: m.ForwardKey, sent: s.m.forwarded})
	s.summaries.Go(s.joinSystem)
	return nil
}

// joinSystem waits until this node's replica of the system group, which
// the placement gives it, has caught up, then seals stale records again
// and creates the first admin if no node did, trying again until it
// succeeds: the placement needs only etcd, so nothing here waits for
// itself. Until then auth answers logins and sessions with
// auth.ErrCatchingUp.
func (s *Server) joinSystem() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stopping
		cancel()
	}()
	start, warned := time.Now(), time.Now()
	for {
		pw, err := s.openSystem(ctx)
		if err == nil {
			s.log.Info("clients and sessions caught up with the cluster")
			if pw != "" {
				s.log.Warn("created the admin client with a generated password, shown only this once", "client", s.cfg.AdminID, "password", pw)
			}
			return
		}
		if time.Since(warned) >= 10*time.Second {
			// Logins and sessions are refused meanwhile: say why.
			warned = time.Now()
			s.log.Warn("clients and sessions still catching up with the cluster", "for", time.Since(start).Round(time.Second), "err", err)
		} else {
			s.log.Debug("clients and sessions not caught up yet", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond): // not hosted yet, or no leader: the placement and elections go on
		}
	}
}

// openSystem catches up, seals, bootstraps and opens auth, and returns
// the admin password it generated, if it did.
func (s *Server) openSystem(ctx context.Context) (string, error) {
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.auth.CatchUp(wait); err != nil {
		return "", err
	}
	if err := s.auth.Reseal(); err != nil {
		return "", err
	}
	pw, err := s.bootstrap()
	if err == nil {
		s.auth.Open()
	}
	return pw, err
}

// withHost replaces addr's host.
func withHost(host, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(host, port)
}

// leaveCluster stops the membership, which closes the etcd client;
// stopCluster, once the scheduler stopped, closes replication.
func (s *Server) leaveCluster() {
	if s.cl != nil && s.cl.member != nil {
		s.cl.member.Stop()
	}
}

func (s *Server) stopCluster() error {
	if s.cl == nil {
		return nil
	}
	if s.cl.member == nil {
		_ = s.cl.etcd.Close() // the member would have
	}
	return s.cl.tr.Close()
}

// forwardClient is the HTTP client of forwarded requests: HTTP/2 when
// the nodes serve TLS (whose roots the server's TLS configuration
// holds), HTTP/1.1 otherwise.
func (s *Server) forwardClient() *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	if s.cfg.TLS != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: s.cfg.TLS.ClientCAs, Certificates: s.cfg.TLS.Certificates, MinVersion: tls.VersionTLS12}
		tr.ForceAttemptHTTP2 = true
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

package server

import (
	"context"
	"errors"
	"log/slog"
	"math/bits"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
)

// Server is the Boomerang server: the store, auth, the scheduler and its
// delivery engine, the raw TCP listener and the HTTP listeners. Create it
// with New, Start it, and Stop it.
type Server struct {
	cfg Config
	log *slog.Logger
	cl  *clusterNode // nil: standalone

	st        *store.Store
	auth      *auth.Auth
	egress    *egress.Policy
	engine    engine // nil when Config.Deliverer is set
	sched     *scheduler.Scheduler
	reg       *prometheus.Registry
	svc       *Service
	m         *metrics
	hist      *history
	samp      *sampler
	tcp       *tcpServer
	ui        *uiHandler // nil with Config.Panel.NoUI
	httpSrv   *http.Server
	httpLn    net.Listener
	metricSrv *http.Server // nil unless Config.MetricsAddr is set
	metricLn  net.Listener
	started   time.Time

	bootstrapPassword string

	ready     atomic.Bool
	startMu   sync.Mutex
	begun     bool
	torn      bool // teardown ran
	stopOnce  sync.Once
	stopErr   error
	stopping  chan struct{} // closed when Stop begins
	summaries sync.WaitGroup
}

// New checks cfg and returns a server; Start opens and listens.
func New(cfg Config) (*Server, error) {
	cfg.ensureDefaults()
	if cfg.Partitions == 0 {
		cfg.Partitions = min(store.DefaultShards, 1<<bits.Len(uint(runtime.GOMAXPROCS(0)-1)))
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	policy, err := callbackPolicy(&cfg)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, log: cfg.Logger, egress: policy, stopping: make(chan struct{})}, nil
}

// Start checks and opens the data directory and the store, creates the
// bootstrap admin on first start, starts the delivery engine and the
// scheduler (recovering every task), then listens. It returns once
// requests are served, and logs what was recovered once it has counted
// it. On failure what was started is stopped again.
func (s *Server) Start(ctx context.Context) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.begun {
		return errors.New("server: Start called twice")
	}
	s.begun = true
	begin := time.Now()
	if err := s.start(ctx); err != nil {
		_ = s.teardown(context.Background())
		return err
	}
	s.ready.Store(true)
	s.log.Info("listening", "tcp", s.TCPAddr(), "http", s.HTTPAddr(), "metrics", s.MetricsAddr(), "tls", s.cfg.TLS != nil,
		"data", s.cfg.DataDir, "partitions", s.cfg.Partitions, "version", s.cfg.Version)
	s.summaries.Go(func() { s.logRecovery(time.Since(begin)) })
	return nil
}

func (s *Server) start(ctx context.Context) error {
	var err error
	s.started = s.cfg.Clock.Now()
	if err := prepareDataDir(s.cfg.DataDir, s.cfg.AllowOpenDataDir); err != nil {
		return err
	}
	if s.st, err = store.Open(s.cfg.DataDir, store.Options{Logger: s.log.With("component", "store"), FS: s.cfg.StoreFS, Shards: s.cfg.Shards}); err != nil {
		return err
	}
	// After the store: a new key file in a directory without a store
	// would make it look like someone else's directory.
	keys, err := secretKeys(&s.cfg, s.log)
	if err != nil {
		return err
	}
	if s.cfg.Cluster != nil {
		if err := s.prepareCluster(); err != nil {
			return err
		}
		keys = s.shareSecretKey(ctx, keys)
	}
	s.auth, err = auth.New(s.st, auth.Config{
		SessionTTL: s.cfg.SessionTTL, Hash: s.cfg.PasswordHash, Clock: s.cfg.Clock, Logger: s.log.With("component", "auth"),
		SecretKeys: keys, LoginChecksPerSecond: s.cfg.LoginChecksPerSecond, MaxLoginWait: s.cfg.MaxLoginWait,
		LoginsPerSource: s.cfg.LoginsPerSource, Replicated: s.cfg.Cluster != nil,
	})
	if err != nil {
		return err
	}
	forgetDataDirKey(&s.cfg, s.log)

	reg := prometheus.NewRegistry()
	s.reg = reg
	if err := registerRuntime(reg); err != nil {
		return err
	}
	if s.m, err = newMetrics(reg); err != nil {
		return err
	}
	deliverer, retry, err := s.deliverer(reg)
	if err != nil {
		return err
	}
	s.hist = newHistory(&s.cfg, s.protocolOf)
	sc := scheduler.Config{
		Store: s.st, System: s.auth, Deliverer: s.hist.wrap(deliverer), Retry: retry, OnFinished: s.onFinished, Clock: s.cfg.Clock, Logger: s.log.With("component", "scheduler"),
		Partitions: s.cfg.Partitions, MaxPayload: s.cfg.MaxPayloadBytes,
		DeadLetterPolicy:     s.deadLetterLimits,
		GroupLimit:           s.groupLimit,
		GroupRate:            s.auth.GroupRate,
		MinInterval:          s.cfg.Limits.MinInterval,
		IdempotencyRetention: s.cfg.Limits.IdempotencyRetention,
		MaxIdempotencyKeys:   s.cfg.Limits.IdempotencyKeys,
	}
	if s.cfg.Cluster != nil {
		sc.NodeID, sc.Placed, sc.Transport = s.cfg.Cluster.NodeID, true, s.cl.tr
	}
	if s.sched, err = scheduler.New(sc); err != nil {
		return err
	}
	if err := s.sched.Start(ctx); err != nil {
		return err
	}
	if err := s.startSystem(ctx); err != nil {
		return err
	}
	if err := reg.Register(&stateCollector{sched: s.sched, st: s.st, auth: s.auth}); err != nil {
		return err
	}
	s.svc = &Service{
		auth: s.auth, sched: s.sched, clock: s.cfg.Clock, log: s.log, egress: s.egress,
		maxPayload: s.cfg.MaxPayloadBytes, listBudget: s.cfg.MaxFrameBytes - responseOverhead,
		info: s.info, clientChanged: s.clientChanged, panel: s.newPanel(), groupShard: s.st.GroupShard,
	}
	if s.ui, err = s.newUI(); err != nil {
		return err
	}
	if err := s.listen(reg); err != nil {
		return err
	}
	if s.cfg.Cluster != nil {
		return s.joinCluster()
	}
	return nil
}

// startSystem attaches auth to the replica node, which hosts the system
// group (clients and sessions) beside the task shards, waits for the
// group's leader (this node: a standalone server hosts it with one
// voter), seals stale records again and creates the first admin. A
// cluster node does that once it has joined (joinSystem).
func (s *Server) startSystem(ctx context.Context) error {
	s.auth.Attach(s.sched.Node())
	if s.cfg.Cluster != nil {
		return nil
	}
	if err := s.auth.AwaitLeader(ctx); err != nil {
		return err
	}
	if err := s.auth.Reseal(); err != nil {
		return err
	}
	pw, err := s.bootstrap()
	s.bootstrapPassword = pw
	return err
}

// bootstrap creates the first admin, or says when a configured admin
// password is not the existing admin's: it only applies to an empty
// store, and a user following a guide would otherwise get "invalid
// client id or password" with no clue why. It returns the password it
// generated, if it did.
func (s *Server) bootstrap() (string, error) {
	pw, created, err := s.auth.Bootstrap(s.cfg.AdminID, s.cfg.AdminPassword)
	if err != nil {
		return "", err
	}
	switch {
	case created:
		return pw, nil
	case s.cfg.AdminPassword != "" && !s.auth.CheckPassword(s.cfg.AdminID, s.cfg.AdminPassword):
		s.log.Warn("the configured admin password is not in use: clients already exist in the data directory, and "+
			"the admin password only applies to the first start; log in with the password set then, or start with an empty data directory",
			"admin", s.cfg.AdminID, "data", s.cfg.DataDir)
	}
	return "", nil
}

// deadLetterLimits is a client's dead letter policy, as the scheduler
// enforces it: its own, or the server's default maximum.
func (s *Server) deadLetterLimits(client string) scheduler.DeadLetterLimits {
	l := scheduler.DeadLetterLimits{MaxEntries: s.cfg.Limits.DeadLetters}
	if c, ok := s.auth.Limits(client); ok {
		if c.DlqMaxEntries > 0 {
			l.MaxEntries = int(c.DlqMaxEntries)
		}
		l.Retention = time.Duration(c.DlqRetentionMs) * time.Millisecond
	}
	return l
}

// groupLimit is how many tasks one group of client may hold: its own
// limit, or the server's (0: the scheduler's default).
func (s *Server) groupLimit(client string) int {
	if c, ok := s.auth.Limits(client); ok && c.GroupLimit > 0 {
		return int(c.GroupLimit)
	}
	return s.cfg.Limits.GroupTasks
}

// Stop stops accepting connections and requests, answers the requests
// already read, waits for the delivery attempts under way, then closes
// the store. If ctx ends first, connections are cut and attempts still
// under way are delivered again after the next start. Stop may be called
// more than once, also after a failed Start; later calls return the first
// one's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.startMu.Lock()
		defer s.startMu.Unlock()
		s.ready.Store(false)
		s.summaries.Wait()
		s.stopErr = s.teardown(ctx)
		switch {
		case !s.begun:
		case s.stopErr != nil:
			s.log.Error("stopped", "err", s.stopErr)
		default:
			s.log.Info("stopped")
		}
	})
	return s.stopErr
}

// teardown stops whatever was started, in reverse order, once.
func (s *Server) teardown(ctx context.Context) error {
	if s.torn {
		return nil
	}
	s.torn = true
	var errs []error
	if s.tcp != nil {
		errs = append(errs, s.tcp.shutdown(ctx))
	}
	for _, hs := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{s.httpSrv, s.httpLn}, {s.metricSrv, s.metricLn}} {
		switch {
		case hs.srv != nil:
			if err := hs.srv.Shutdown(ctx); err != nil {
				errs = append(errs, err)
				_ = hs.srv.Close()
			}
		case hs.ln != nil:
			_ = hs.ln.Close()
		}
	}
	if s.samp != nil {
		s.samp.shutdown()
	}
	s.leaveCluster()
	if s.sched != nil {
		errs = append(errs, s.sched.Stop(ctx))
	}
	errs = append(errs, s.stopCluster())
	if s.engine != nil {
		errs = append(errs, s.engine.Close(ctx))
	}
	if s.st != nil {
		errs = append(errs, s.st.Close())
	}
	return errors.Join(errs...)
}

// TCPAddr returns the raw TCP listener's address, "" before Start.
func (s *Server) TCPAddr() string {
	if s.tcp == nil {
		return ""
	}
	return s.tcp.ln.Addr().String()
}

// HTTPAddr returns the HTTP listener's address, "" before Start.
func (s *Server) HTTPAddr() string { return addrOf(s.httpLn) }

// MetricsAddr returns the metrics listener's address: "" before Start or
// without Config.MetricsAddr.
func (s *Server) MetricsAddr() string { return addrOf(s.metricLn) }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Scheduler returns the running scheduler, nil before Start: for
// components of the same process that register tasks themselves (the
// outbox).
func (s *Server) Scheduler() *scheduler.Scheduler { return s.sched }

// Registerer returns the registry /metrics serves, nil before Start.
func (s *Server) Registerer() prometheus.Registerer {
	if s.reg == nil {
		return nil
	}
	return s.reg
}

// BootstrapPassword returns the admin password generated by this start,
// or "" if none was (a password was configured, or clients existed).
func (s *Server) BootstrapPassword() string { return s.bootstrapPassword }

func (s *Server) info() *boomerangv1.GetServerInfoResponse {
	return &boomerangv1.GetServerInfoResponse{
		Version:         s.cfg.Version,
		StartedMs:       s.started.UnixMilli(),
		Partitions:      uint32(s.cfg.Partitions),
		TcpAddress:      s.TCPAddr(),
		HttpAddress:     s.HTTPAddr(),
		MaxPayloadBytes: uint64(s.cfg.MaxPayloadBytes),
		MaxFrameBytes:   uint64(s.cfg.MaxFrameBytes),

		MinRefreshMs:       s.cfg.Panel.MinRefresh.Milliseconds(),
		CompletedWindowMs:  s.cfg.Panel.CompletedWindow.Milliseconds(),
		PayloadSearchBytes: uint64(s.cfg.Panel.PayloadSearchBytes),
		UiPath:             s.uiPath(),
	}
}

// onFinished tells the panel's history, and Config.OnFinished, of an
// occurrence's final outcome.
func (s *Server) onFinished(f scheduler.Finished) {
	s.hist.finish(f)
	if s.cfg.OnFinished != nil {
		s.cfg.OnFinished(f)
	}
}

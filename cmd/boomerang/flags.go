package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/delivery"
	"github.com/boomerangd/boomerang/internal/outbox"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/server"
)

// DefaultShutdownTimeout bounds a graceful shutdown.
const DefaultShutdownTimeout = 30 * time.Second

// options are everything the serve command is told.
type options struct {
	cfg             server.Config
	configFile      string
	pools           poolFlag
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	tlsCert         string
	tlsKey          string
	tlsClientCA     string
	sinkCA          string
	secretKeyFile   string
	outboxSources   []string
	outboxNode      string
	outbox          []outbox.Config // parsed from outboxSources by complete
	cluster         server.ClusterConfig
	embedEtcd       bool
	etcdPeerAddr    string
	etcdDataDir     string
}

func newOptions() *options { return &options{pools: poolFlag{}} }

// register binds the options to flags with their defaults.
func (o *options) register(fs *pflag.FlagSet) {
	c := &o.cfg
	fs.StringVar(&o.configFile, "config", "", "YAML file of settings, keyed by flag name (flags and environment win over it)")
	fs.StringVar(&c.DataDir, "data-dir", server.DefaultDataDir, "directory of the store; created if missing")
	fs.StringVar(&c.TCPAddr, "tcp-addr", server.DefaultTCPAddr, "raw TCP (protobuf frames) listen address; port 0 picks one")
	fs.StringVar(&c.HTTPAddr, "http-addr", server.DefaultHTTPAddr, "HTTP listen address: Connect/gRPC/gRPC-Web/JSON, /healthz, /readyz (and /metrics without --metrics-addr)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate chain: serve both ports over TLS (needs --tls-key)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.tlsClientCA, "tls-client-ca", "", "PEM CA bundle: require client certificates signed by it on both ports")
	fs.StringVar(&o.sinkCA, "sink-ca", "", "PEM CA bundle trusted, besides the system's, for TLS to queue brokers (activemqs://)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics (and /debug/pprof/) on this address instead of the HTTP address")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "require \"Authorization: Bearer <token>\" for /metrics and /debug/pprof/")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go's profiler under /debug/pprof/ beside /metrics")
	fs.BoolVar(&c.AllowOpenDataDir, "allow-open-data-dir", false, "start even if the data directory is readable by its group or others")
	fs.StringVar(&o.secretKeyFile, "secret-key-file", "", "file of the keys that seal signing secrets at rest, the first one sealing (default: $BOOMERANG_SECRET_KEY, else a key generated into the data directory)")
	fs.StringArrayVar(&c.CallbackAllow, "callback-allow", nil, "callbacks may go only here: a network, address or host pattern (*.example.com); repeatable (default: anywhere not denied)")
	fs.StringArrayVar(&c.CallbackDeny, "callback-deny", []string{"default"}, "callbacks may not go here; repeatable; \"default\" is link-local, metadata, unspecified and multicast addresses, \"none\" nothing")
	fs.StringVar(&c.Panel.UIPath, "ui-path", server.DefaultUIPath, "path of the web panel on the HTTP address")
	fs.BoolVar(&c.Panel.NoUI, "no-ui", false, "serve no web panel")
	fs.DurationVar(&c.Panel.MinRefresh, "ui-min-refresh", server.DefaultMinRefresh, "shortest auto-refresh interval the panel offers")
	fs.DurationVar(&c.Panel.CompletedWindow, "completed-window", server.DefaultCompletedWindow, "how long finished tasks and their attempts stay listed (at most 24h)")
	fs.IntVar(&c.Panel.CompletedMax, "completed-max", server.DefaultCompletedMax, "finished tasks kept in memory for the panel, oldest dropped first")
	fs.DurationVar(&c.Panel.StatsInterval, "stats-interval", server.DefaultStatsInterval, "how often the panel's counters are sampled")
	fs.DurationVar(&c.Panel.StatsRetention, "stats-retention", server.DefaultStatsRetention, "how long the panel's counter samples are kept")
	fs.IntVar(&c.Panel.AuditEntries, "audit-entries", server.DefaultAuditEntries, "operator actions the audit log keeps in memory")
	fs.IntVar(&c.MaxPayloadBytes, "max-payload-bytes", server.DefaultMaxPayloadBytes, "largest task payload in bytes")
	fs.IntVar(&c.MaxFrameBytes, "max-frame-bytes", 0, "largest raw TCP frame and Connect message in bytes (0: max-payload-bytes + 64 KiB)")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", server.DefaultMaxInFlight, "requests one raw TCP connection may have outstanding before it is not read further")
	fs.IntVar(&c.MaxConnections, "max-connections", server.DefaultMaxConnections, "open raw TCP connections; more are refused with BUSY")
	fs.IntVar(&c.MaxPendingLogins, "max-pending-logins", server.DefaultMaxPendingLogins, "raw TCP connections that have not logged in yet; more are refused with BUSY")
	fs.IntVar(&c.MaxPendingLoginsPerAddr, "max-pending-logins-per-addr", server.DefaultMaxPendingLoginsPerAddr, "the same from one source address (IPv6: one /64)")
	fs.IntVar(&c.MaxConnBufferBytes, "max-conn-buffer-bytes", 0, "bytes of requests and unsent responses one raw TCP connection may hold before it is not read (0: 8 MiB, at least 4 frames)")
	fs.IntVar(&c.MaxBufferBytes, "max-buffer-bytes", 0, "the same over all connections (0: 256 MiB)")
	fs.DurationVar(&c.HandshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "time a new raw TCP connection has to log in (and an HTTP request to send its headers)")
	fs.DurationVar(&c.HTTPReadTimeout, "http-read-timeout", server.DefaultHTTPReadTimeout, "time an HTTP request has to arrive whole, body included")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "idle raw TCP and HTTP keep-alive connections are closed after this")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "a raw TCP client that does not read its responses for this long is disconnected")
	fs.DurationVar(&c.SessionTTL, "session-ttl", auth.DefaultSessionTTL, "how long a session lives after login or refresh")
	fs.StringVar(&c.AdminID, "admin-id", server.DefaultAdminID, "id of the admin client created on first start")
	fs.StringVar(&c.AdminPassword, "admin-password", "", "password of the admin created on first start (empty: generate one and print it once)")
	fs.Float64Var(&c.LoginChecksPerSecond, "login-checks-per-second", 0, "password checks per second for logins, server-wide; more wait (0: 8 per core)")
	fs.DurationVar(&c.MaxLoginWait, "max-login-wait", auth.DefaultMaxLoginWait, "how long a login waits for its password check before BUSY")
	fs.Float64Var(&c.LoginsPerSource, "logins-per-source", auth.DefaultLoginsPerSource, "login attempts per second from one source address (bursts of 5 s worth); more get BUSY")
	fs.IntVar(&c.Partitions, "partitions", 0, "scheduler partitions, a power of two (0: GOMAXPROCS rounded up)")
	fs.IntVar(&c.Shards, "shards", 0, "virtual shards of a new data directory, a power of two (0: 64); fixed once the directory exists")
	fs.Var(&o.pools, "pool", "dispatch pool name=maxConcurrent[,maxPerSecond]; repeatable (maxPerSecond 0: no rate limit)")
	fs.DurationVar(&c.DeliveryTimeout, "delivery-timeout", delivery.DefaultTimeout, "timeout of a delivery attempt whose callback sets none")
	fs.IntVar(&c.Limits.GroupTasks, "group-limit", scheduler.DefaultGroupLimit, "tasks one group may hold, for clients that set no limit; more get GROUP_FULL")
	fs.DurationVar(&c.Limits.MinInterval, "min-interval", scheduler.DefaultMinInterval, "shortest repeat interval of a recurring task")
	fs.IntVar(&c.Limits.DeadLetters, "dlq-max-entries", scheduler.DefaultMaxDeadLetters, "dead letters kept per client that sets no maximum; the oldest beyond it are deleted")
	fs.DurationVar(&c.Limits.IdempotencyRetention, "idempotency-retention", scheduler.DefaultIdempotencyRetention, "how long an idempotency key is remembered after its registration")
	fs.IntVar(&c.Limits.IdempotencyKeys, "max-idempotency-keys", scheduler.DefaultMaxIdempotencyKeys, "idempotency keys remembered; the oldest beyond it are forgotten early")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "on SIGINT or SIGTERM, how long to wait for requests and deliveries under way")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")
	fs.StringArrayVar(&o.outboxSources, "outbox-source", nil,
		"PostgreSQL outbox source, comma-separated key=value settings (name=…,dsn=…,client=…); repeatable; see docs/outbox.md")
	fs.StringVar(&o.outboxNode, "outbox-node", "", "this instance's name among the nodes running the outbox sources (default: kept in the data directory)")
	o.registerCluster(fs)
}

// registerCluster binds the cluster's flags; see docs/cluster.md.
func (o *options) registerCluster(fs *pflag.FlagSet) {
	c := &o.cluster
	fs.StringSliceVar(&c.Etcd, "etcd", nil, "etcd endpoints (host:port, comma-separated): join a cluster (default: standalone)")
	fs.StringVar(&c.Name, "cluster", "boomerang", "name of the cluster to join (with --etcd)")
	fs.Uint64Var(&c.NodeID, "node-id", 0, "this node's id in the cluster, unique, above 0 (with --etcd; a standalone data directory is node 1's)")
	fs.StringVar(&c.Addr, "cluster-addr", server.DefaultClusterAddr, "replication listen address (with --etcd)")
	fs.StringVar(&c.Advertise, "advertise", "", "host:port the other nodes reach --cluster-addr at; its host is advertised with the TCP and HTTP ports (default: --cluster-addr)")
	fs.StringVar(&c.Zone, "zone", "", "zone of this node: each shard's replicas are spread over zones")
	fs.IntVar(&c.ReplicationFactor, "replication-factor", 3, "replicas of each shard, once that many nodes exist")
	fs.DurationVar(&c.DeadTimeout, "dead-timeout", time.Minute, "how long a node may be gone before its replicas are placed elsewhere")
	fs.BoolVar(&o.embedEtcd, "embed-etcd", false, "also run an embedded single-member etcd, serving clients at the first --etcd endpoint")
	fs.StringVar(&o.etcdPeerAddr, "etcd-peer-addr", defaultEtcdPeerAddr, "peer address of the embedded etcd")
	fs.StringVar(&o.etcdDataDir, "etcd-data-dir", "", "data directory of the embedded etcd (default: <data-dir>-etcd)")
}

// poolFlag collects --pool values.
type poolFlag map[string]delivery.PoolConfig

// parsePool parses name=maxConcurrent[,maxPerSecond].
func parsePool(s string) (string, delivery.PoolConfig, error) {
	var pc delivery.PoolConfig
	name, limits, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || name == "" {
		return "", pc, fmt.Errorf("pool %q: want name=maxConcurrent[,maxPerSecond]", s)
	}
	concurrent, rate, hasRate := strings.Cut(limits, ",")
	n, err := strconv.Atoi(strings.TrimSpace(concurrent))
	if err != nil || n < 1 {
		return "", pc, fmt.Errorf("pool %q: maxConcurrent must be a positive integer", s)
	}
	pc.MaxConcurrent = n
	if hasRate {
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if err != nil || r < 0 {
			return "", pc, fmt.Errorf("pool %q: maxPerSecond must be a number, not negative", s)
		}
		pc.MaxPerSecond = r
	}
	return name, pc, nil
}

func (p poolFlag) String() string { return strings.Join(p.GetSlice(), " ") }

func (p poolFlag) Set(s string) error { return p.Append(s) }

func (p poolFlag) Type() string { return "pool" }

// Append adds one pool; pflag.SliceValue lets the environment and the
// config file give several.
func (p poolFlag) Append(s string) error {
	name, pc, err := parsePool(s)
	if err != nil {
		return err
	}
	p[name] = pc
	return nil
}

// Replace sets the pools to vals.
func (p poolFlag) Replace(vals []string) error {
	clear(p)
	for _, v := range vals {
		if err := p.Append(v); err != nil {
			return err
		}
	}
	return nil
}

// GetSlice returns the pools in flag syntax, sorted by name.
func (p poolFlag) GetSlice() []string {
	var out []string
	for name, pc := range p {
		out = append(out, fmt.Sprintf("%s=%d,%g", name, pc.MaxConcurrent, pc.MaxPerSecond))
	}
	slices.Sort(out)
	return out
}

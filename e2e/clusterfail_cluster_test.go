package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// fcluster is a cluster the failure suite can break and mend: nodes that
// restart on their data directories and ports, replication through
// proxies, and an etcd that restarts on its own.
type fcluster struct {
	t       *testing.T
	etcd    *fetcd
	nodes   []*fnode              // by id - 1
	viewErr atomic.Pointer[error] // why the last view failed, for settle's report
}

// fnode is one node, running or not.
type fnode struct {
	id      int
	dataDir string
	tcp     string // fixed across restarts, so clients reconnect
	http    string
	repl    string // the node's own replication address
	proxy   *replProxy
	srv     *server        // nil when not started
	admin   *client.Client // through the fixed TCP address, so it outlives restarts
	stopped bool           // SIGSTOP sent, no SIGCONT yet

	logMu sync.Mutex
	log   []string // the last lines it logged, across restarts
}

// addNode makes a node, not started yet.
func (c *fcluster) addNode() *fnode {
	nd := &fnode{id: len(c.nodes) + 1, dataDir: newDataDir(c.t), tcp: freeAddr(c.t), http: freeAddr(c.t), repl: freeAddr(c.t)}
	nd.proxy = startReplProxy(c.t, nd.repl)
	c.nodes = append(c.nodes, nd)
	return nd
}

// start runs the node on its data directory and addresses.
func (c *fcluster) start(nd *fnode) {
	c.t.Helper()
	args := []string{"--etcd", c.etcd.addr, "--cluster", "e2e", "--node-id", strconv.Itoa(nd.id),
		"--cluster-addr", nd.repl, "--advertise", nd.proxy.addr(), "--tcp-addr", nd.tcp, "--http-addr", nd.http,
		"--dead-timeout", "5s"}
	nd.srv = startServer(c.t, nd.dataDir, args...)
	nd.stopped = false
	c.keepLog(nd)
}

// keepLog keeps the node's log lines in memory, for a failed scenario's
// report (shardLines), and appends them to a file in -cluster.logs.
func (c *fcluster) keepLog(nd *fnode) {
	var f *os.File
	if *clusterLogs != "" {
		name := strings.NewReplacer("/", "-").Replace(c.t.Name()) + "-node" + strconv.Itoa(nd.id) + ".log"
		var err error
		if f, err = os.OpenFile(filepath.Join(*clusterLogs, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	lines := nd.srv.lines
	go func() {
		if f != nil {
			defer f.Close()
		}
		for kv := range lines {
			nd.logMu.Lock()
			nd.log = append(nd.log, kv["_line"])
			if len(nd.log) > maxKeptLines {
				nd.log = nd.log[len(nd.log)-maxKeptLines/2:]
			}
			nd.logMu.Unlock()
			if f != nil {
				fmt.Fprintln(f, kv["_line"])
			}
		}
	}()
}

// maxKeptLines bounds the log lines a node keeps in memory.
const maxKeptLines = 20000

// shardLines returns every node's kept log lines about one shard, at
// most limit of them.
func (c *fcluster) shardLines(shard uint16, limit int) []string {
	var out []string
	for _, nd := range c.nodes {
		nd.logMu.Lock()
		for _, l := range nd.log {
			if mark := " shard=" + strconv.Itoa(int(shard)); (strings.Contains(l, mark+" ") || strings.HasSuffix(l, mark)) && len(out) < limit {
				out = append(out, "node "+strconv.Itoa(nd.id)+": "+l)
			}
		}
		nd.logMu.Unlock()
	}
	return out
}

// kill sends SIGKILL to a running node and waits until it is gone.
func (c *fcluster) kill(nd *fnode) {
	if nd.srv == nil {
		return
	}
	if nd.stopped {
		_ = nd.srv.cmd.Process.Signal(syscall.SIGCONT)
	}
	nd.srv.kill()
	nd.srv = nil
}

// signal sends SIGSTOP or SIGCONT.
func (c *fcluster) signal(nd *fnode, sig syscall.Signal) {
	c.t.Helper()
	if err := nd.srv.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
	nd.stopped = sig == syscall.SIGSTOP
}

// running returns the nodes started and not stopped.
func (c *fcluster) running() []*fnode {
	var out []*fnode
	for _, nd := range c.nodes {
		if nd.srv != nil && !nd.stopped {
			out = append(out, nd)
		}
	}
	return out
}

// any returns an admin client of a running node.
func (c *fcluster) any() *client.Client {
	c.t.Helper()
	r := c.running()
	if len(r) == 0 {
		c.t.Fatal("no node is running")
	}
	if r[0].admin == nil {
		r[0].admin = r[0].login(c.t, "admin", adminPassword)
	}
	return r[0].admin
}

// view returns the cluster as GetCluster reports it, or nil.
func (c *fcluster) view(cl *client.Client) *boomerangv1.GetClusterResponse {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := cl.GetCluster(ctx, &boomerangv1.GetClusterRequest{})
	if err != nil {
		err = fmt.Errorf("GetCluster at %s: %w", cl.Addr(), err)
		c.viewErr.Store(&err)
		return nil
	}
	return v
}

// busiest returns the running node leading the most shards, once every
// running node holding replicas leads some: right after a restart the
// controller is still handing leaderships back.
func (c *fcluster) busiest(cl *client.Client) *fnode {
	c.t.Helper()
	led := map[string]int{}
	waitFor(c.t, "leaders spread over the nodes", func() bool {
		v := c.view(cl)
		if v == nil {
			return false
		}
		clear(led)
		holds := map[string]bool{}
		for _, s := range v.GetShards() {
			led[s.GetLeader()]++
			for _, r := range s.GetReplicas() {
				holds[r] = true
			}
		}
		return !slices.ContainsFunc(c.running(), func(nd *fnode) bool { id := strconv.Itoa(nd.id); return holds[id] && led[id] == 0 })
	})
	return slices.MaxFunc(c.running(), func(a, b *fnode) int { return led[strconv.Itoa(a.id)] - led[strconv.Itoa(b.id)] })
}

// awaitLedWithout waits until every shard is led by a node other than
// those given, as etcd reports, and returns how long that took.
func (c *fcluster) awaitLedWithout(cl *client.Client, gone ...*fnode) time.Duration {
	c.t.Helper()
	start := time.Now()
	waitFor(c.t, "every shard led by a live node", func() bool {
		v := c.view(cl)
		return v != nil && !slices.ContainsFunc(v.GetShards(), func(s *boomerangv1.ClusterShard) bool {
			return s.GetLeader() == "" || slices.ContainsFunc(gone, func(nd *fnode) bool { return s.GetLeader() == strconv.Itoa(nd.id) })
		})
	})
	return time.Since(start)
}

// login connects the SDK to the node as id, waiting while the node
// cannot log in yet (its copy of clients and sessions catching up after
// it started, or no leader for them during a fault).
func (nd *fnode) login(t *testing.T, id, password string) *client.Client {
	t.Helper()
	var c *client.Client
	waitFor(t, "a login to node "+strconv.Itoa(nd.id), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		c, err = client.Dial(ctx, nd.tcp, client.Credentials{ClientID: id, Password: password})
		return err == nil
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// ready reports whether the node answers /readyz with 200.
func (nd *fnode) ready() bool {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := http.Client{Transport: tr, Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + nd.http + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// fetcd is boomerang etcd on fixed ports and data, so that it restarts
// as the same member.
type fetcd struct {
	t       *testing.T
	addr    string
	peer    string
	dataDir string
	cmd     *exec.Cmd
}

func startFetcd(t *testing.T) *fetcd {
	t.Helper()
	e := &fetcd{t: t, addr: freeAddr(t), peer: freeAddr(t), dataDir: filepath.Join(t.TempDir(), "etcd")}
	e.start()
	t.Cleanup(e.kill)
	return e
}

// start runs etcd and waits until it serves.
func (e *fetcd) start() {
	e.t.Helper()
	e.cmd = exec.Command(filepath.Join(binDir, "boomerang"), "etcd", "--data-dir", e.dataDir, "--client-addr", e.addr,
		"--peer-addr", e.peer)
	stderr, err := e.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	serving := make(chan struct{})
	go func(sv chan struct{}) {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if parseLogLine(sc.Text())["msg"] == "embedded etcd serving" && sv != nil {
				close(sv)
				sv = nil
			}
		}
	}(serving)
	select {
	case <-serving:
	case <-time.After(waitLimit):
		e.t.Fatal("boomerang etcd did not start serving")
	}
}

// kill stops etcd with SIGKILL.
func (e *fetcd) kill() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	e.cmd = nil
}

// freeAddr returns a loopback address free right now, for a process
// to listen on next, and again at the same address after a restart. Its
// port is below the kernel's ephemeral range, which outgoing
// connections and listeners on port 0 take their ports from: a port
// picked there could be taken by one of those, of this test or of any
// other process, before the node listens on it.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := ephemeralLow()
	for range 1000 {
		port := portFloor + nextPort.Add(1)%(low-portFloor)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		a := ln.Addr().String()
		ln.Close() // the process listens on it next
		return a
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

// portFloor is the lowest port freeAddr hands out.
const portFloor = 10000

// nextPort walks the ports freeAddr tries, from a random start so that
// test processes running at once try different ones.
var nextPort = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(rand.Int64N(1 << 20))
	return &n
}()

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int64 {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int64
	if _, err := fmt.Sscan(string(data), &low, &high); err != nil || low <= portFloor+1000 {
		return 32768
	}
	return low
}

// settle waits until every shard has replicas replicas on live, unmarked
// nodes and is led by its preferred leader; on timeout it says which
// shards are not.
func (c *fcluster) settle(replicas int) {
	c.t.Helper()
	cl := c.any()
	var why string
	limit := time.Now().Add(waitLimit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		why = unsettled(c.view(cl), replicas)
		if why == "" {
			return
		}
		if e := c.viewErr.Load(); why == "no view" && e != nil {
			why += ": " + (*e).Error()
		}
		if time.Now().After(limit) {
			c.t.Fatalf("the cluster did not settle: %s", why)
		}
	}
}

// unsettled says why a view is not settled, or "".
func unsettled(v *boomerangv1.GetClusterResponse, replicas int) string {
	if v == nil || len(v.GetShards()) == 0 {
		return "no view"
	}
	usable := map[string]bool{}
	for _, n := range v.GetNodes() {
		usable[n.GetId()] = n.GetLive() && n.GetMark() == ""
	}
	var bad []string
	for _, s := range v.GetShards() {
		if len(s.GetReplicas()) != replicas || s.GetLeader() == "" || s.GetLeader() != s.GetPreferredLeader() ||
			slices.ContainsFunc(s.GetReplicas(), func(id string) bool { return !usable[id] }) {
			bad = append(bad, fmt.Sprintf("shard %d replicas %v leader %q preferred %q", s.GetShard(), s.GetReplicas(), s.GetLeader(), s.GetPreferredLeader()))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("%d shards, e.g. %v; nodes %v", len(bad), bad[:min(3, len(bad))], v.GetNodes())
}

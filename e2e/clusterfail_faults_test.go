package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Each scenario is its own test; TestClusterFailAll runs every fault on
// five nodes, in an order the seed picks.

func TestClusterFailKillLeader(t *testing.T) {
	runScenario(t, 3, nil, func(s *scenario) { s.killLeader(); s.killLeader() })
}

func TestClusterFailKillMajority(t *testing.T) { runScenario(t, 3, nil, (*scenario).killMajority) }

func TestClusterFailKillAll(t *testing.T) { runScenario(t, 3, nil, (*scenario).killAll) }

func TestClusterFailStopLeader(t *testing.T) { runScenario(t, 3, nil, (*scenario).stopLeader) }

func TestClusterFailPartition(t *testing.T) {
	runScenario(t, 3, nil, func(s *scenario) { s.partition(true); s.partition(false) })
}

func TestClusterFailEtcd(t *testing.T) { runScenario(t, 3, nil, (*scenario).etcdOutage) }

func TestClusterFailMembership(t *testing.T) { runScenario(t, 3, nil, (*scenario).addAndRemove) }

func TestClusterFailDisk(t *testing.T) {
	var small *fnode
	runScenario(t, 3, func(nd *fnode) {
		if nd.id == 3 {
			small = nd
			mountTmpfs(t, nd)
		}
	}, func(s *scenario) { s.fillDisk(small) })
}

func TestClusterFailAll(t *testing.T) {
	runScenario(t, 5, nil, func(s *scenario) {
		faults := []func(){s.killLeader, s.killMajority, s.stopLeader, func() { s.partition(true) },
			func() { s.partition(false) }, s.etcdOutage, s.addAndRemove}
		s.rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
		for _, f := range faults {
			f()
			s.awaitDeliveries(10)
		}
	})
}

// killLeader kills the node leading the most shards, measures the
// failover, and restarts it.
func (s *scenario) killLeader() {
	cl := s.c.any()
	victim := s.c.busiest(cl)
	s.c.kill(victim)
	noteFailover(s.t, "SIGKILL of node "+strconv.Itoa(victim.id), s.c.awaitLedWithout(s.c.any(), victim))
	s.c.start(victim)
	s.c.settle(3)
}

// killMajority kills a majority of the nodes, waits until the rest see
// them gone, and restarts them. Without a majority no session can be
// created (sessions are the system group's, which needs a quorum to
// write), so every node gets its admin session first: the survivors go
// on accepting it from their own copy.
func (s *scenario) killMajority() {
	r := s.c.running()
	for _, nd := range r {
		if nd.admin == nil {
			nd.admin = nd.login(s.t, "admin", adminPassword)
		}
	}
	s.rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
	victims := r[:len(r)/2+1]
	for _, nd := range victims {
		s.c.kill(nd)
	}
	cl := s.c.any()
	waitFor(s.t, "the killed nodes seen gone", func() bool {
		v := s.c.view(cl)
		return v != nil && !slices.ContainsFunc(v.GetNodes(), func(n *boomerangv1.ClusterNode) bool {
			return n.GetLive() && slices.ContainsFunc(victims, func(nd *fnode) bool { return n.GetId() == strconv.Itoa(nd.id) })
		})
	})
	for _, nd := range victims {
		s.c.start(nd)
	}
	s.c.settle(3)
}

// killAll kills every node at once and restarts them.
func (s *scenario) killAll() {
	r := s.c.running()
	for _, nd := range r {
		s.c.kill(nd)
	}
	for _, nd := range r {
		s.c.start(nd)
	}
	s.c.settle(3)
}

// stopLeader stops the busiest leader with SIGSTOP until the others lead
// its shards, then lets it go on.
func (s *scenario) stopLeader() {
	cl := s.c.any()
	victim := s.c.busiest(cl)
	s.c.signal(victim, syscall.SIGSTOP)
	noteFailover(s.t, "SIGSTOP of node "+strconv.Itoa(victim.id), s.c.awaitLedWithout(s.c.any(), victim))
	s.c.signal(victim, syscall.SIGCONT)
	s.c.settle(3)
}

// partition cuts the busiest leader off from the other nodes' replication
// (full: both ways; else only what it sends), until the others lead its
// shards, then heals it.
func (s *scenario) partition(full bool) {
	cl := s.c.any()
	victim := s.c.busiest(cl)
	set := func(cut bool) {
		for _, nd := range s.c.nodes {
			if nd != victim {
				nd.proxy.setCut(uint64(victim.id), cut)
				if full {
					victim.proxy.setCut(uint64(nd.id), cut)
				}
			}
		}
	}
	set(true)
	kind := "one-way partition"
	if full {
		kind = "full partition"
	}
	noteFailover(s.t, kind+" of node "+strconv.Itoa(victim.id), s.c.awaitLedWithout(cl, victim))
	set(false)
	s.c.settle(3)
}

// etcdOutage kills etcd while the shards go on taking and firing tasks,
// then starts it again.
func (s *scenario) etcdOutage() {
	s.c.etcd.kill()
	before, _ := s.hist.Counts()
	s.awaitDeliveries(50)
	waitFor(s.t, "registrations while etcd is down", func() bool { now, _ := s.hist.Counts(); return now >= before+50 })
	s.c.etcd.start()
	s.c.settle(3)
}

// addAndRemove adds a node, waits until it holds replicas, then removes
// another and stops it once it holds none.
func (s *scenario) addAndRemove() {
	nd := s.c.addNode()
	s.c.start(nd)
	cl := s.c.any()
	holds := func(nd *fnode) bool {
		v := s.c.view(cl)
		return v == nil || slices.ContainsFunc(v.GetShards(), func(sh *boomerangv1.ClusterShard) bool {
			return slices.Contains(sh.GetReplicas(), strconv.Itoa(nd.id))
		})
	}
	waitFor(s.t, "the new node to hold replicas", func() bool { return holds(nd) && s.c.view(cl) != nil })
	s.c.settle(3)
	// Acting as admin, the generator may be on nodes that keep clients
	// of their own, on the first node only: it stays.
	others := slices.DeleteFunc(s.c.running(), func(o *fnode) bool { return o == nd || (o.id == 1 && !*clientsEverywhere) })
	old := others[s.rng.IntN(len(others))]
	if _, err := cl.ChangeCluster(testContext(s.t), &boomerangv1.ChangeClusterRequest{
		Change: &boomerangv1.ChangeClusterRequest_Remove{Remove: strconv.Itoa(old.id)}}); err != nil {
		s.t.Fatal(err)
	}
	waitFor(s.t, "the removed node to hold no replica", func() bool { return !holds(old) })
	if err := old.srv.stop(); err != nil {
		s.t.Errorf("node %d stopped with %v", old.id, err)
	}
	old.srv = nil
	s.c.settle(3)
}

// mountTmpfs puts the node's data directory on a small tmpfs of its own.
func mountTmpfs(t *testing.T, nd *fnode) {
	t.Helper()
	dir := filepath.Dir(nd.dataDir)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs (the disk scenario needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if nd.srv != nil {
			nd.srv.kill()
		}
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillDisk fills the node's filesystem; the node must fail visibly (stop
// being ready, or exit), and the others take over its shards. The node
// stays down (killed) until the next round frees its disk and restarts
// it.
func (s *scenario) fillDisk(nd *fnode) {
	filler := filepath.Join(filepath.Dir(nd.dataDir), "filler")
	if nd.srv == nil { // the last round's failure: free the disk, restart
		if err := os.Remove(filler); err != nil {
			s.t.Fatal(err)
		}
		s.c.start(nd)
		s.c.settle(3)
	}
	f, err := os.Create(filler)
	if err != nil {
		s.t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		s.t.Fatalf("filling the tmpfs: %v", err)
	}
	waitFor(s.t, "the node with a full disk to fail visibly", func() bool {
		select {
		case <-nd.srv.exited:
			return true
		default:
			return !nd.ready()
		}
	})
	select {
	case <-nd.srv.exited:
		s.t.Logf("node %d exited on a full disk: %v", nd.id, nd.srv.waitErr)
	default:
		s.t.Logf("node %d is not ready on a full disk", nd.id)
	}
	s.c.kill(nd)
	s.c.awaitLedWithout(s.c.any(), nd)
}

package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/boomerangd/boomerang/internal/testwait"
)

// Proposals made while a leader hands its leadership to a peer that
// cannot take it are committed once the hand-over fails: raft drops
// them meanwhile, and a leader that went on leading without them would
// leave its state machine waiting for them for good.
func TestProposalsWhileATransferFails(t *testing.T) {
	nw, c := oneShard(t)
	const sh = 0
	l := c.leader(sh)
	to := c.follower(sh)
	nw.isolate(to.id, true) // it never hears of the transfer

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.node.TransferLeadership(ctx, sh, to.id) }()
	testwait.For(t, waitLimit, "the transfer under way", func() bool {
		var transferee uint64
		_ = l.node.do(context.Background(), func() error {
			transferee = l.node.groups[sh].rn.Status().LeadTransferee
			return nil
		})
		return transferee != raft.None
	})
	var want []string
	for i := range 5 {
		d := fmt.Sprintf("during-%d", i)
		want = append(want, d)
		if err := l.node.Propose(sh, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	cancel() // raft gives the transfer up an election timeout later
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("transfer to an isolated node: %v", err)
	}
	l.rec.await(t, "the proposals made during the transfer", func() bool {
		applied := l.rec.applied[sh] // await holds the recorder's lock
		return !slices.ContainsFunc(want, func(d string) bool { return !slices.Contains(applied, d) })
	})
	if got := l.rec.entries(sh); !isSubset(want, got) {
		t.Fatalf("applied %v", got)
	}
	nw.isolate(to.id, false)
}

// A replica restarted with every committed entry in its state passes a
// read barrier at once: its state machine applies nothing new to say how
// far it got, so the node must know that from the state it loaded.
func TestReadBarrierAfterRestart(t *testing.T) {
	nw, c := oneShard(t)
	const sh = 0
	c.converge()
	down := c.follower(sh)
	i := slices.Index(c.rs, down)
	down.stop(t)
	c.rs[i] = startReplica(t, down.id, down.node.cfg.Peers, shards[:1], down.fs, nw)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.rs[i].node.ReadBarrier(ctx, sh); err != nil {
		t.Fatalf("read barrier on the restarted replica: %v", err)
	}
}

// oneShard starts three replicas of shard 0 on an in-process network,
// stopped when the test ends, and commits a few entries.
func oneShard(t *testing.T) (*localNet, *cluster) {
	t.Helper()
	nw := &localNet{LocalNetwork: NewLocalNetwork(1)}
	c := startCluster(t, nw, shards[:1])
	t.Cleanup(func() {
		c.stop()
		nw.close()
	})
	c.commit("before", 5)
	return nw, c
}

// follower returns a replica that does not lead shard.
func (c *cluster) follower(shard uint16) *replica {
	if l := c.leader(shard); l == c.rs[0] {
		return c.rs[1]
	}
	return c.rs[0]
}

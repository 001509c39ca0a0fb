package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

// A shard's replica moves from one node to another under writes: the new
// node joins empty, catches up from a snapshot as a learner, becomes a
// voter, takes over the leadership, and the old replica is removed and
// its log and state deleted.
func TestReplicaMoves(t *testing.T) {
	for _, tn := range networks {
		t.Run(tn.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			nw := tn.new(t)
			defer nw.close()
			c := startCluster(t, nw, shards[:1])
			defer c.stop()
			c.commit("before", 200) // past what a log keeps: the newcomer needs a snapshot
			const sh = 0
			fresh, l := c.addVoter(ctx, nw, sh, 4)
			if err := l.node.TransferLeadership(ctx, sh, 4); err != nil {
				t.Fatalf("transfer: %v", err)
			}
			c.rs = append(c.rs, fresh)
			if got := c.leader(sh); got != fresh {
				got.rec.await(t, "the transfer", func() bool { return fresh.rec.lead[sh] > 0 })
			}
			if err := fresh.node.ChangeConf(ctx, sh, Remove, l.id); err != nil {
				t.Fatalf("remove: %v", err)
			}
			awaitNotMember(t, l, sh)
			if err := l.node.Unhost(ctx, sh); err != nil {
				t.Fatalf("unhost: %v", err)
			}
			if shards, err := l.st.RaftShards(); err != nil || slices.Contains(shards, sh) {
				t.Fatalf("the removed replica kept its log: %v, %v", shards, err)
			}
			if meta, err := l.st.ShardMeta(sh); err != nil || meta.GetApplied() != 0 {
				t.Fatalf("the removed replica kept its state: %v, %v", meta, err)
			}
			c.rs = slices.DeleteFunc(c.rs, func(r *replica) bool { return r == l })
			c.commit("after", 10)
			for _, r := range c.rs {
				c.caughtUp(r, batch{"after", 10})
			}
			c.rs = append(c.rs, l) // stopped with the others
		})
	}
}

// addVoter starts replica id on a fresh disk, hosts shard there, and has
// the shard's leader l add it as a learner, which catches up from a
// snapshot, then promote it to voter.
func (c *cluster) addVoter(ctx context.Context, nw network, shard uint16, id uint64) (fresh, l *replica) {
	c.t.Helper()
	fresh = startReplica(c.t, id, []uint64{1, 2, 3, id}, nil, store.NewMemFS(), nw)
	if err := fresh.node.Host(ctx, shard, nil); err != nil {
		c.t.Fatal(err)
	}
	l = c.leader(shard)
	if err := l.node.ChangeConf(ctx, shard, AddLearner, id); err != nil {
		c.t.Fatalf("add learner: %v", err)
	}
	fresh.rec.await(c.t, "the learner's snapshot", func() bool { return fresh.rec.restored[shard] > 0 })
	if err := l.node.ChangeConf(ctx, shard, Promote, id); err != nil {
		c.t.Fatalf("promote: %v", err)
	}
	return fresh, l
}

// Unhost refuses a shard whose group still holds the node.
func TestUnhostRefusesAMember(t *testing.T) {
	r := startReplica(t, 1, nil, shards[:1], store.NewMemFS(), nil)
	defer r.stop(t)
	err := r.node.Unhost(context.Background(), 0)
	if !errors.Is(err, ErrStillMember) {
		t.Fatalf("Unhost of a member: %v", err)
	}
}

// awaitNotMember waits until r has applied its removal from shard's
// group.
func awaitNotMember(t *testing.T, r *replica, shard uint16) {
	t.Helper()
	waitFor(t, fmt.Sprintf("replica %d to see its removal from shard %d", r.id, shard), func() bool {
		st, err := r.node.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(st, func(s ShardStatus) bool { return s.Shard == shard })
		return i < 0 || !slices.Contains(st[i].Voters, r.id) && !slices.Contains(st[i].Learners, r.id)
	})
}

// A demoted replica may delete its copy once it applied its demotion,
// before and whether or not it hears of its removal.
func TestDemotedReplicaUnhosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	nw := networks[0].new(t)
	defer nw.close()
	c := startCluster(t, nw, shards[:1])
	defer c.stop()
	c.commit("before", 5)
	l := c.leader(0)
	var gone *replica
	for _, r := range c.rs {
		if r != l {
			gone = r
		}
	}
	if err := gone.node.Unhost(ctx, 0); !errors.Is(err, ErrStillMember) {
		t.Fatalf("Unhost of a voter: %v", err)
	}
	if err := l.node.ChangeConf(ctx, 0, Demote, gone.id); err != nil {
		t.Fatalf("demote: %v", err)
	}
	awaitLearner(t, gone, 0)
	if err := gone.node.Unhost(ctx, 0); err != nil {
		t.Fatalf("Unhost of a learner: %v", err)
	}
	if err := l.node.ChangeConf(ctx, 0, Remove, gone.id); err != nil {
		t.Fatalf("remove: %v", err)
	}
	c.rs = slices.DeleteFunc(c.rs, func(r *replica) bool { return r == gone })
	c.commit("after", 5)
	c.rs = append(c.rs, gone) // stopped with the others
}

// A replica restarted before its log is truncated past its last
// configuration change comes back with that configuration: promoted to
// voter after the snapshot it joined from, it can still be made leader.
func TestRestartKeepsConfigurationChanges(t *testing.T) {
	for _, tn := range networks {
		t.Run(tn.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			nw := tn.new(t)
			defer nw.close()
			c := startCluster(t, nw, shards[:1])
			defer c.stop()
			c.commit("before", 10)
			const sh = 0
			fresh, _ := c.addVoter(ctx, nw, sh, 4)
			c.rs = append(c.rs, fresh)
			c.commit("promoted", 5)
			c.caughtUp(fresh, batch{"promoted", 5})
			fresh.stop(t)
			c.rs[3] = startReplica(t, 4, fresh.node.cfg.Peers, nil, fresh.fs, nw)
			c.commit("restarted", 3)
			c.caughtUp(c.rs[3], batch{"restarted", 3})
			// A transfer lapses if the target does not win in time: ask
			// again until it leads. A learner never would.
			back := c.rs[3]
			testwait.For(t, waitLimit, "the restarted voter leads", func() bool {
				back.rec.mu.Lock()
				leads := back.rec.lead[sh] > 0
				back.rec.mu.Unlock()
				if !leads {
					_ = c.leader(sh).node.TransferLeadership(ctx, sh, back.id)
				}
				return leads
			})
		})
	}
}

// A replica dropped from a node and placed back on it later starts over:
// what the dropped copy had applied does not count for the new one, whose
// log begins empty, waiting for the leader's snapshot.
func TestReplicaPlacedBackAfterItsDrop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	nw := networks[0].new(t)
	defer nw.close()
	c := startCluster(t, nw, shards[:1])
	defer c.stop()
	const sh = 0
	c.commit("before", 200) // past what a log keeps
	l := c.leader(sh)
	var gone *replica
	for _, r := range c.rs {
		if r != l {
			gone = r
		}
	}
	if err := l.node.ChangeConf(ctx, sh, Demote, gone.id); err != nil {
		t.Fatalf("demote: %v", err)
	}
	awaitLearner(t, gone, 0)
	if err := gone.node.Unhost(ctx, sh); err != nil {
		t.Fatalf("unhost: %v", err)
	}
	gone.node.mu.Lock()
	stale, kept := gone.node.applied[sh]
	gone.node.mu.Unlock()
	if kept {
		t.Fatalf("the node still counts index %d applied for the shard it dropped", stale)
	}
	if err := l.node.ChangeConf(ctx, sh, Remove, gone.id); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := gone.node.Host(ctx, sh, nil); err != nil {
		t.Fatalf("host again: %v", err)
	}
	if err := l.node.ChangeConf(ctx, sh, AddLearner, gone.id); err != nil {
		t.Fatalf("add learner again: %v", err)
	}
	c.commit("after", 10)
	c.caughtUp(gone, batch{"after", 10})
	if _, err := gone.node.Status(ctx); err != nil {
		t.Fatalf("the replica placed back stopped its node: %v", err)
	}
}

// A heartbeat its leader meant for the earlier copy of a replica placed
// back on its node, committing past the new copy's empty log, is dropped:
// stepped, it would stop the node.
func TestStrayHeartbeatIsDropped(t *testing.T) {
	logs := &logLines{}
	r := startReplica(t, 2, []uint64{1, 2, 3}, nil, store.NewMemFS(), networks[0].new(t), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	defer r.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := r.node.Host(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	hb := &raftpb.Message{
		Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(1), To: proto.Uint64(2),
		Term: proto.Uint64(5), Commit: proto.Uint64(203),
	}
	r.node.Receive([]Envelope{{Shard: 0, Msg: hb}})
	for range 2 { // the second runs on a turn after the heartbeat's
		if _, err := r.node.Status(ctx); err != nil {
			t.Fatalf("the node stopped: %v", err)
		}
	}
	if !logs.has("earlier copy", "commit=203", "last=0") {
		t.Fatalf("no word of the dropped heartbeat in %q", logs.lines)
	}
}

// An acknowledgement the dropped copy of a replica sent before its
// removal, reaching the leader after the replica was placed back, is
// dropped: stepped, it would have the leader take the new, empty copy to
// hold the old one's log, and never send it what it lacks.
func TestStaleAcknowledgementIsDropped(t *testing.T) {
	for _, tn := range networks[:2] {
		t.Run(tn.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			nw := tn.new(t)
			defer nw.close()
			c := startCluster(t, nw, shards[:1])
			defer c.stop()
			const sh = 0
			c.commit("before", 200) // past what a log keeps
			l := c.leader(sh)
			gone := c.rs[slices.IndexFunc(c.rs, func(r *replica) bool { return r != l })]
			if err := l.node.ChangeConf(ctx, sh, Demote, gone.id); err != nil {
				t.Fatalf("demote: %v", err)
			}
			awaitLearner(t, gone, sh)
			if err := gone.node.Unhost(ctx, sh); err != nil {
				t.Fatalf("unhost: %v", err)
			}
			if err := l.node.ChangeConf(ctx, sh, Remove, gone.id); err != nil {
				t.Fatalf("remove: %v", err)
			}
			nw.isolate(gone.id, true) // the new copy acknowledges nothing
			if err := gone.node.Host(ctx, sh, nil); err != nil {
				t.Fatalf("host again: %v", err)
			}
			if err := l.node.ChangeConf(ctx, sh, AddLearner, gone.id); err != nil {
				t.Fatalf("add learner again: %v", err)
			}
			st := l.shardStatus(t, sh)
			ack := &raftpb.Message{
				Type: raftpb.MessageType_MsgAppResp.Enum(), From: proto.Uint64(gone.id), To: proto.Uint64(l.id),
				Term: proto.Uint64(st.Term), Index: proto.Uint64(st.Commit),
			}
			l.node.Receive([]Envelope{{Shard: sh, Msg: ack}}) // the old copy was added with the group: FromAdded 0
			l.shardStatus(t, sh)                              // a turn after the message's
			if st := l.shardStatus(t, sh); st.Match[gone.id] != 0 {
				t.Fatalf("the leader takes the new copy to match its log up to %d", st.Match[gone.id])
			}
			nw.isolate(gone.id, false)
			c.commit("after", 10)
			c.caughtUp(gone, batch{"after", 10})
		})
	}
}

// awaitLearner waits until r applied its demotion to learner of shard.
func awaitLearner(t *testing.T, r *replica, shard uint16) {
	t.Helper()
	waitFor(t, fmt.Sprintf("replica %d to apply its demotion on shard %d", r.id, shard), func() bool {
		st, err := r.node.Status(context.Background())
		return err == nil && len(st) == 1 && slices.Contains(st[0].Learners, r.id)
	})
}

// shardStatus returns what r's node knows of shard.
func (r *replica) shardStatus(t *testing.T, shard uint16) ShardStatus {
	t.Helper()
	st, err := r.node.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(st, func(s ShardStatus) bool { return s.Shard == shard })
	if i < 0 {
		t.Fatalf("replica %d does not host shard %d", r.id, shard)
	}
	return st[i]
}

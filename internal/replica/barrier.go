package replica

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
)

// Read barriers. A replica's state may lag its group's: ReadBarrier lets
// a reader on any replica, follower or learner included, wait until the
// state holds every change committed before it asked, with Raft's
// ReadIndex: the leader confirms with a quorum that it still leads and
// names its commit index, which this replica then applies.

// readKeyLen is the length of a read barrier's request context: unlike
// the leases' 8-byte send times (lease.go), so neither takes the other's.
const readKeyLen = 16

// ReadBarrier waits until this node's replica of shard has applied every
// entry committed when it was called, so that what is read of the local
// state afterwards includes every change acknowledged before the call.
// It fails with ErrUnknownShard on a node that hosts no replica of shard.
// While the group has no leader the request is lost: it is asked again
// every election timeout, until ctx ends.
func (n *Node) ReadBarrier(ctx context.Context, shard uint16) error {
	index, err := n.readIndex(ctx, shard)
	if err != nil {
		return err
	}
	for {
		n.mu.Lock()
		applied := n.applied[shard]
		n.mu.Unlock()
		if applied >= index {
			return nil
		}
		if err := n.awaitTick(ctx); err != nil {
			return err
		}
	}
}

// readIndex returns the commit index shard's leader confirms.
func (n *Node) readIndex(ctx context.Context, shard uint16) (uint64, error) {
	key := make([]byte, readKeyLen)
	binary.BigEndian.PutUint64(key, n.nextRead.Add(1))
	done := make(chan uint64, 1)
	defer func() {
		_ = n.do(context.Background(), func() error { delete(n.reads, string(key)); return nil })
	}()
	retry := time.Duration(n.cfg.ElectionTicks) * n.cfg.Tick
	for {
		err := n.do(ctx, func() error {
			g := n.groups[shard]
			if g == nil {
				return fmt.Errorf("%w: %d", ErrUnknownShard, shard)
			}
			if n.reads == nil {
				n.reads = make(map[string]chan uint64)
			}
			n.reads[string(key)] = done
			g.rn.ReadIndex(key)
			return nil
		})
		if err != nil {
			return 0, err
		}
		select {
		case index := <-done:
			return index, nil
		case <-n.cfg.Clock.After(retry):
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-n.stop:
			return 0, ErrStopped
		}
	}
}

// readsDone answers the read barriers rd confirms.
func (n *Node) readsDone(rd raft.Ready) {
	for _, rs := range rd.ReadStates {
		if done, ok := n.reads[string(rs.RequestCtx)]; ok && len(rs.RequestCtx) == readKeyLen {
			select {
			case done <- rs.Index:
			default: // answered already: asked twice
			}
		}
	}
}

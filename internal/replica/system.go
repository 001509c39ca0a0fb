package replica

import "github.com/boomerangd/boomerang/internal/store"

// The system group. With Config.System set, the entries of
// store.SystemShard, when the node hosts it, go to Config.System and
// every other shard's to Config.StateMachine. Unlike a task shard, a follower hands
// its proposals for the system group on to the leader (raft's proposal
// forwarding), so any node can make a change there; the state machine
// learns from Apply whether it was committed.

// systemMux sends the system shard's work to one state machine and every
// other shard's to another.
type systemMux struct {
	system, shards StateMachine
}

func (m systemMux) of(shard uint16) StateMachine {
	if shard == store.SystemShard {
		return m.system
	}
	return m.shards
}

func (m systemMux) AppliedIndex(shard uint16) (uint64, error) { return m.of(shard).AppliedIndex(shard) }
func (m systemMux) Lead(shard uint16, term uint64)            { m.of(shard).Lead(shard, term) }
func (m systemMux) Leased(shard uint16)                       { m.of(shard).Leased(shard) }
func (m systemMux) Restore(shard uint16, write func() error)  { m.of(shard).Restore(shard, write) }
func (m systemMux) Drop(shard uint16, write func() error)     { m.of(shard).Drop(shard, write) }

// Apply splits the turn's entries, keeping each shard's in order.
func (m systemMux) Apply(committed []Committed) {
	var sys, rest []Committed
	for _, c := range committed {
		if c.Shard == store.SystemShard {
			sys = append(sys, c)
		} else {
			rest = append(rest, c)
		}
	}
	if len(sys) > 0 {
		m.system.Apply(sys)
	}
	if len(rest) > 0 {
		m.shards.Apply(rest)
	}
}

// forwards reports whether a follower forwards its proposals for shard.
func forwards(shard uint16) bool { return shard == store.SystemShard }

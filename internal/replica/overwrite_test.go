package replica

import (
	"testing"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/testwait"
)

// A follower whose log holds entries a new leader replaces can get the
// replacements and a commit index covering them in one message. The
// entries it is given to apply must then be the new ones, durable: not
// applied while the old ones at those indexes are all its disk holds (a
// power loss then would leave a state that says they were applied over a
// log that holds others, which Raft, raising its commit to the applied
// index at start, would take for committed).
func TestEntriesReplacedAndCommittedTogetherAreDurableWhenApplied(t *testing.T) {
	const sh = 3
	const first = initialIndex + 1
	nw := NewLocalNetwork(1) // the test plays the leaders, 1 then 3; nothing reaches them
	defer nw.Close()
	p := newPowerCuts(t, nw, []uint16{sh})
	r := p.start(2, store.NewMemFS())

	// The cut comes at the second turn that applies: the first applies
	// the old leader's first entry, the second the new leader's.
	p.arm(r.id, 2)

	// Leader 1, term 2, appends five entries and commits the first: once
	// it is applied, all five are on the follower's disk.
	r.node.Receive([]Envelope{appendTo2(sh, 1, 2, initialIndex, initialTerm, first, entryRun(first, first+4, 2, "old"))})
	r.rec.await(t, "the first entry applied", func() bool { return r.rec.index[sh] == first })

	// Leader 3, term 3, replaces the last four with three of its own and
	// commits them, in one message.
	r.node.Receive([]Envelope{appendTo2(sh, 3, 3, first, 2, first+3, entryRun(first+1, first+3, 3, "new"))})
	testwait.For(t, waitLimit, "the cut at the turn that applies the new entries", func() bool { return p.wasCut(r.id) })
	at, _ := p.disarm(r.id)
	if at.applied[sh] != first+3 {
		t.Fatalf("cut with shard %d applied to %d, not at the turn that applied the new entries", sh, at.applied[sh])
	}

	held := map[uint64]uint64{}
	for _, e := range logAt(t, at, sh).Entries {
		held[e.GetIndex()] = e.GetTerm()
	}
	for i := uint64(first + 1); i <= first+3; i++ {
		if held[i] != 3 {
			t.Errorf("entry %d of term 3 was applied while the disk held term %d there", i, held[i])
		}
	}
	p.restart(r.id, r, at).stop(t)
}

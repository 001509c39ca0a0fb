package scheduler

import (
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
)

// A follower's entries wait. The entries of a shard this node leads are
// applied as soon as they are committed: callers wait for them. Those of
// a shard it follows are needed only once it leads the shard, so the
// partition gathers them and applies them together, when they are
// followLinger old or followMaxEntries many, and before anything that
// needs the shard's state: leading it, a snapshot replacing it, dropping
// it, stopping. One store batch then covers many turns of the node's
// loop, with each shard's applied index once instead of once a turn, and
// the leader's work on this loop is not interrupted by a follower's apply
// every turn.
const (
	followLinger     = 10 * time.Millisecond
	followMaxEntries = 64
)

// apply applies committed entries: a led shard's at once, a followed
// shard's once gathered (see above).
func (p *partition) apply(committed []replica.Committed) {
	var now []replica.Committed
	for _, c := range committed {
		if p.leads(c.Shard) {
			now = append(now, c)
			continue
		}
		if len(p.behind) == 0 {
			p.behindSince = p.mono()
		}
		p.behind = append(p.behind, c)
		p.behindEntries += len(c.Entries)
	}
	if len(now) > 0 {
		p.applyNow(now)
	}
	if p.behindEntries >= followMaxEntries {
		p.catchUp()
	}
}

// catchUp applies the followed shards' gathered entries.
func (p *partition) catchUp() {
	if len(p.behind) == 0 {
		return
	}
	behind := p.behind
	p.behind, p.behindEntries = nil, 0
	p.applyNow(behind)
}

// catchUpIfDue applies the gathered entries once the oldest is
// followLinger old.
func (p *partition) catchUpIfDue() {
	if len(p.behind) > 0 && p.followWait() <= 0 {
		p.catchUp()
	}
}

// followWait returns how long until the gathered entries are due to be
// applied (an hour when none wait).
func (p *partition) followWait() time.Duration {
	if len(p.behind) == 0 {
		return time.Hour
	}
	return p.behindSince.Add(followLinger).Sub(p.mono())
}

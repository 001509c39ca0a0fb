package outbox

// guard holds back a group's head while a row of its group ordered
// earlier may still be hidden in a transaction that has not committed
// (doc.go, "Order").
//
// Each poll first reads the writers: the transactions holding a write
// lock on the table (pg_locks, by virtual transaction id), then reads the
// heads with a new snapshot. A row first seen by one poll gets as its
// blockers the writers read at the start of the next poll, which come
// after the snapshot that showed it. A row may go once none of its
// blockers is among the writers read at the start of the current poll,
// before its snapshot: a row that takes its place before the seen row did
// belongs to a transaction that held the lock then, so if all of those
// have ended before this snapshot, the earlier row is visible to it, and
// the head this poll computes is the true one.
//
// Polls read each group's head and the row after it, so in a steady flow
// the next head has been seen two polls before it is due.
type guard struct {
	seen    map[string]*writerSet // row id → its blockers; nil until the poll after its first sighting
	fresh   []string              // rows first seen by the last poll
	current writerSet             // the writers at the start of this poll
	limit   int
}

// writerSet is a set of virtual transaction ids.
type writerSet map[string]struct{}

var noWriters = writerSet{}

func newGuard(limit int) *guard { return &guard{seen: map[string]*writerSet{}, limit: limit} }

// begin starts a poll with the writers read before its snapshot: they
// are the blockers of the rows the last poll saw first.
func (g *guard) begin(writers writerSet) {
	b := &writers
	if len(writers) == 0 {
		b = &noWriters
	}
	for _, id := range g.fresh {
		if w, ok := g.seen[id]; ok && w == nil {
			g.seen[id] = b
		}
	}
	g.fresh = g.fresh[:0]
	g.current = writers
}

// see notes a row the current poll read.
func (g *guard) see(id string) {
	if _, ok := g.seen[id]; ok {
		return
	}
	if len(g.seen) >= g.limit {
		// Rows finished or deleted behind the poll's back leave
		// entries; starting over only costs each head two more polls.
		clear(g.seen)
		g.fresh = g.fresh[:0]
	}
	g.seen[id] = nil
	g.fresh = append(g.fresh, id)
}

// settled reports whether a row seen before may go now.
func (g *guard) settled(id string) bool {
	b := g.seen[id]
	if b == nil {
		return false
	}
	for w := range *b {
		if _, still := g.current[w]; still {
			return false
		}
	}
	if len(*b) > 0 {
		g.seen[id] = &noWriters // all gone: no need to look again
	}
	return true
}

// forget drops a row that has been dispatched.
func (g *guard) forget(id string) { delete(g.seen, id) }

package server

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// smallResponse bounds the response of an operation that returns no task,
// list or payload.
const smallResponse = 4 << 10

// byteBudget bounds the bytes held by requests being served and responses
// not yet written: one per raw TCP connection and one for them all. A
// request larger than a budget takes all of it, so it still goes through,
// alone.
type byteBudget struct {
	sem  *semaphore.Weighted
	size int64
	used atomic.Int64 // for the metrics
}

func newByteBudget(size int) *byteBudget {
	return &byteBudget{sem: semaphore.NewWeighted(int64(size)), size: int64(size)}
}

// connAllowance is what each connection may hold without drawing on the
// server's budget: when stalled connections have spent that, the others
// still log in and make small requests, while the large ones wait.
const connAllowance = 64 << 10

// hold is what one request holds: of its connection's budget, of its
// connection's allowance, and of the server's budget.
type hold struct{ conn, own, all int64 }

// reserve takes n bytes of the connection's budget, then of its allowance
// and, for the rest, of the server's budget, waiting as needed; ctx ends
// the wait.
func (c *conn) reserve(ctx context.Context, n int) (hold, error) {
	h := hold{conn: min(int64(n), c.budget.size)}
	if err := c.budget.sem.Acquire(ctx, h.conn); err != nil {
		return hold{}, err
	}
	h.own = c.takeAllowance(int64(n))
	if rest := min(int64(n)-h.own, c.t.budget.size); rest > 0 {
		if err := c.t.budget.sem.Acquire(ctx, rest); err != nil {
			c.release(h)
			return hold{}, err
		}
		h.all = rest
		c.t.budget.used.Add(rest)
	}
	return h, nil
}

// takeAllowance takes up to n bytes of the connection's allowance.
func (c *conn) takeAllowance(n int64) int64 {
	for {
		left := c.allowance.Load()
		take := min(left, n)
		if take <= 0 || c.allowance.CompareAndSwap(left, left-take) {
			return max(take, 0)
		}
	}
}

// shrink gives back what h holds beyond n bytes: the server's budget
// first, then the allowance.
func (c *conn) shrink(h hold, n int) hold {
	keep := hold{conn: min(h.conn, int64(n)), own: min(h.own, int64(n))}
	keep.all = min(h.all, max(int64(n)-keep.own, 0))
	c.release(hold{conn: h.conn - keep.conn, own: h.own - keep.own, all: h.all - keep.all})
	return keep
}

func (c *conn) release(h hold) {
	if h.conn > 0 {
		c.budget.sem.Release(h.conn)
	}
	if h.own > 0 {
		c.allowance.Add(h.own)
	}
	if h.all > 0 {
		c.t.budget.used.Add(-h.all)
		c.t.budget.sem.Release(h.all)
	}
}

func (h hold) plus(o hold) hold {
	return hold{conn: h.conn + o.conn, own: h.own + o.own, all: h.all + o.all}
}

// responseBound is the most a request's response may take: a frame for
// operations that return tasks or lists, the request again for a
// registration (its response holds the payload), about the request
// again for a batch of them, little otherwise.
func responseBound(req *boomerangv1.Request, requestSize, maxFrame int) int {
	switch b := req.Body.(type) {
	case *boomerangv1.Request_RegisterTask:
		return requestSize + smallResponse
	case *boomerangv1.Request_RegisterTasks:
		return batchResponseBound(b.RegisterTasks, requestSize)
	case *boomerangv1.Request_GetTask, *boomerangv1.Request_UpdateTask, *boomerangv1.Request_ListTasks,
		*boomerangv1.Request_ListDeadLetters, *boomerangv1.Request_GetDeadLetter, *boomerangv1.Request_ReplayDeadLetter,
		*boomerangv1.Request_UnblockGroup, *boomerangv1.Request_ListClients, *boomerangv1.Request_ListSessions:
		return maxFrame
	}
	return smallResponse
}

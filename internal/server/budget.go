package server

import (
	"context"

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
}

func newByteBudget(size int) *byteBudget {
	return &byteBudget{sem: semaphore.NewWeighted(int64(size)), size: int64(size)}
}

// hold is what one request holds of its connection's budget and of the
// server's.
type hold struct{ conn, all int64 }

// reserve takes n bytes of the connection's budget, then of the server's,
// waiting for both; ctx ends the wait.
func (c *conn) reserve(ctx context.Context, n int) (hold, error) {
	h := hold{conn: min(int64(n), c.budget.size), all: min(int64(n), c.t.budget.size)}
	if err := c.budget.sem.Acquire(ctx, h.conn); err != nil {
		return hold{}, err
	}
	if err := c.t.budget.sem.Acquire(ctx, h.all); err != nil {
		c.budget.sem.Release(h.conn)
		return hold{}, err
	}
	return h, nil
}

// shrink gives back what h holds beyond n bytes.
func (c *conn) shrink(h hold, n int) hold {
	keep := hold{conn: min(h.conn, int64(n)), all: min(h.all, int64(n))}
	c.release(hold{conn: h.conn - keep.conn, all: h.all - keep.all})
	return keep
}

func (c *conn) release(h hold) {
	if h.conn > 0 {
		c.budget.sem.Release(h.conn)
	}
	if h.all > 0 {
		c.t.budget.sem.Release(h.all)
	}
}

func (h hold) plus(o hold) hold { return hold{conn: h.conn + o.conn, all: h.all + o.all} }

// responseBound is the most a request's response may take: a frame for
// operations that return tasks or lists, the request again for a
// registration (its response holds the payload), little otherwise.
func responseBound(req *boomerangv1.Request, requestSize, maxFrame int) int {
	switch req.Body.(type) {
	case *boomerangv1.Request_RegisterTask:
		return requestSize + smallResponse
	case *boomerangv1.Request_GetTask, *boomerangv1.Request_UpdateTask, *boomerangv1.Request_ListTasks,
		*boomerangv1.Request_ListDeadLetters, *boomerangv1.Request_GetDeadLetter, *boomerangv1.Request_ReplayDeadLetter,
		*boomerangv1.Request_UnblockGroup, *boomerangv1.Request_ListClients, *boomerangv1.Request_ListSessions:
		return maxFrame
	}
	return smallResponse
}

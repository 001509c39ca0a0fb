package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// coalescer gathers concurrent Schedule calls into RegisterTasks
// requests. A call that finds no request of the coalescer in flight goes
// out at once, alone and from its own goroutine, as the RegisterTask it
// always was: a lone caller waits for nothing. Calls made while gathered requests are in flight wait
// for company until the last of those is answered or for at most the
// linger, whichever comes first, then leave together. A request never
// holds more than MaxBatch tasks or more bytes than the server's frame
// takes: the call that would overflow it sends the others first.
//
// Each caller gets what RegisterTask would have given it: the task (its
// payload restored: the server leaves it out of batch results) or the
// task's own error. A caller whose context ends stops waiting; if its
// task was not sent yet it is withdrawn, otherwise the request goes on
// for the others, and is abandoned only once every caller has left.
//
// Calls with an idempotency key are not gathered: when the key matches
// an earlier registration, only RegisterTask returns that task's
// payload.
type coalescer struct {
	c      *Client
	linger time.Duration
	timer  *time.Timer
	// off is set once the server refused RegisterTasks as an unknown
	// operation (a server older than it): from then on every call goes
	// alone.
	off atomic.Bool

	mu       sync.Mutex
	pending  []*scheduled
	bytes    int  // itemSize of pending, summed
	inFlight int  // requests sent and not answered, gathered or alone
	armed    bool // timer runs for pending
}

// scheduled is one Schedule call waiting in a coalescer.
type scheduled struct {
	req  *boomerangv1.RegisterTaskRequest
	size int
	done chan answer // capacity 1
	sent *gathered   // set under the coalescer's lock when sent
}

type answer struct {
	task *boomerangv1.Task
	err  error
}

// gathered is one request's worth of calls.
type gathered struct {
	calls  []*scheduled
	cancel context.CancelFunc
	left   atomic.Int64 // callers still waiting
}

func newCoalescer(c *Client, linger time.Duration) *coalescer {
	b := &coalescer{c: c, linger: linger}
	b.timer = time.AfterFunc(time.Hour, b.expire)
	b.timer.Stop()
	return b
}

// schedule registers req, gathered with other calls when it can be.
func (b *coalescer) schedule(ctx context.Context, req *boomerangv1.RegisterTaskRequest) (*boomerangv1.Task, error) {
	limit := b.c.batchBytes()
	size := itemSize(req)
	if req.IdempotencyKey != "" || b.off.Load() || limit == 0 || size > limit {
		return b.c.scheduleAlone(ctx, req)
	}
	s := &scheduled{req: req, size: size, done: make(chan answer, 1)}
	if b.add(s, limit) {
		task, err := b.c.scheduleAlone(ctx, req)
		b.finished()
		return task, err
	}
	select {
	case a := <-s.done:
		return a.task, a.err
	case <-ctx.Done():
		if b.withdraw(s) {
			return nil, fmt.Errorf("client: waiting to be sent: %w", ctx.Err())
		}
		return nil, fmt.Errorf("client: waiting for the response: %w", ctx.Err())
	}
}

// add queues s to be sent with others, or, when nothing is in flight or
// waiting, counts it in flight and returns true: the caller sends it at
// once, alone, and calls finished.
func (b *coalescer) add(s *scheduled, limit int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight == 0 && len(b.pending) == 0 {
		b.inFlight++
		return true
	}
	if len(b.pending) == MaxBatch || b.bytes+s.size > limit {
		b.flush()
	}
	b.pending = append(b.pending, s)
	b.bytes += s.size
	switch {
	case b.inFlight == 0 || len(b.pending) == MaxBatch:
		b.flush()
	case !b.armed:
		b.armed = true
		b.timer.Reset(b.linger)
	}
	return false
}

// finished counts a request answered; once none is in flight, what
// gathered meanwhile leaves without waiting for the linger.
func (b *coalescer) finished() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	if b.inFlight == 0 {
		b.flush()
	}
}

// withdraw takes s out of the calls waiting to be sent and reports
// whether it was still there; otherwise its request may be abandoned
// once no caller waits for it any more.
func (b *coalescer) withdraw(s *scheduled) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.sent != nil {
		if s.sent.left.Add(-1) == 0 {
			s.sent.cancel()
		}
		return false
	}
	for i, p := range b.pending {
		if p == s {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			b.bytes -= s.size
			break
		}
	}
	return true
}

// expire sends what the linger held back.
func (b *coalescer) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	b.flush()
}

// flush sends the pending calls as one request. The caller holds mu.
func (b *coalescer) flush() {
	if len(b.pending) == 0 {
		return
	}
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
	// The request outlives any one caller's context: it ends when
	// answered, with the connection, or once every caller has left.
	ctx, cancel := context.WithCancel(context.Background())
	g := &gathered{calls: b.pending, cancel: cancel}
	g.left.Store(int64(len(g.calls)))
	for _, s := range g.calls {
		s.sent = g
	}
	b.pending, b.bytes = nil, 0
	b.inFlight++
	go b.send(ctx, g)
}

// send makes the request and answers its callers.
func (b *coalescer) send(ctx context.Context, g *gathered) {
	defer g.cancel()
	if len(g.calls) == 1 {
		s := g.calls[0]
		task, err := b.c.scheduleAlone(ctx, s.req)
		s.done <- answer{task, err}
	} else {
		b.sendMany(ctx, g.calls)
	}
	b.finished()
}

func (b *coalescer) sendMany(ctx context.Context, calls []*scheduled) {
	in := &boomerangv1.RegisterTasksRequest{Tasks: make([]*boomerangv1.RegisterTaskRequest, len(calls))}
	for i, s := range calls {
		in.Tasks[i] = s.req
	}
	resp, err := b.c.RegisterTasks(ctx, in)
	if unknownOperation(err) {
		// Nothing was done: each goes alone, now and from now on.
		b.off.Store(true)
		var wg sync.WaitGroup
		for _, s := range calls {
			wg.Go(func() {
				task, err := b.c.scheduleAlone(ctx, s.req)
				s.done <- answer{task, err}
			})
		}
		wg.Wait()
		return
	}
	if err == nil && len(resp.GetResults()) != len(calls) {
		err = fmt.Errorf("%w: %d results for %d tasks", ErrProtocol, len(resp.GetResults()), len(calls))
	}
	for i, s := range calls {
		if err != nil {
			s.done <- answer{err: err}
			continue
		}
		r := resultOf(resp.GetResults()[i])
		if r.Task != nil && len(s.req.Payload) > 0 {
			r.Task.Payload = bytes.Clone(s.req.Payload)
		}
		s.done <- answer{r.Task, r.Err}
	}
}

// unknownOperation reports whether err is a server's refusal of an
// operation it does not know.
func unknownOperation(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == boomerangv1.Status_STATUS_INVALID_REQUEST && e.Field == "body"
}

package delivery

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// route is where an attempt goes.
type route struct {
	protocol storepb.Protocol
	endpoint string
	key      string   // protocol and endpoint: a pool lane, a transport's connection set
	url      *url.URL // HTTP: the endpoint parsed; shared, read only
	timeout  time.Duration
	pool     *pool
}

// attempt is one delivery attempt from Deliver to its outcome. It ends
// exactly once, by finish (the transport's answer) or expire (its
// timeout), whichever comes first.
type attempt struct {
	e       *Engine
	task    *storepb.Task
	number  uint32
	id      uint64
	done    func(error)
	route   route
	signers []*webhook.Signer // HTTP: the client's secrets in use; none without one

	lane   *lane
	slot   bool // holds a slot of route.pool
	begun  time.Time
	timer  clockwork.Timer
	ctx    context.Context // HTTP and gRPC: cancelled when the attempt ends
	cancel context.CancelFunc

	conn     atomic.Pointer[tcpConn] // the connection awaiting its Ack
	finished atomic.Bool
}

// start runs once the pool has given the attempt a slot.
func (a *attempt) start() {
	a.slot = true
	a.begun = a.e.cfg.Clock.Now()
	t := a.e.transport(a.route.protocol)
	if t.contextual() {
		a.ctx, a.cancel = context.WithCancel(a.e.ctx)
	}
	a.timer = a.e.cfg.Clock.AfterFunc(a.route.timeout, a.expire)
	t.send(a)
}

// finish ends the attempt with the transport's outcome.
func (a *attempt) finish(err error) { a.end(err, true) }

func (a *attempt) expire() {
	a.end(fmt.Errorf("%w after %v", ErrTimeout, a.route.timeout), false)
}

func (a *attempt) end(err error, stopTimer bool) {
	if !a.finished.CompareAndSwap(false, true) {
		return
	}
	// The timer is set before the transport sees the attempt, so any
	// other ending reads it safely; the timer's own ending must not.
	if stopTimer && a.timer != nil {
		a.timer.Stop()
	}
	if a.cancel != nil {
		a.cancel()
	}
	if c := a.conn.Load(); c != nil {
		c.forget(a)
	}
	a.e.metrics.record(a, err)
	if a.slot {
		a.route.pool.release(a)
	}
	a.done(err)
	a.e.gate.Exit()
}

// over reports whether the attempt has ended; transports skip ended
// attempts still in their queues.
func (a *attempt) over() bool { return a.finished.Load() }

// message fills m with the attempt's Delivery.
func (a *attempt) message(m *boomerangv1.Delivery, sentMs int64) {
	t := a.task
	m.DeliveryId, m.TaskId, m.Attempt = a.id, t.Id, a.number
	m.Client, m.Group, m.FireAtMs = t.Client, t.Group, t.DueMs
	m.Payload, m.SentMs = t.Payload, sentMs
}

package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/gate"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Engine delivers task occurrences to their endpoints. It implements
// scheduler.Deliverer and scheduler.RetryDecider. Create it with New and
// Close it after the scheduler has stopped.
type Engine struct {
	cfg     Config
	clients clientCache
	pools   map[string]*pool
	byProto [len(protocolLabels)]transport // by storepb.Protocol; [0] unused
	metrics *metrics
	gate    *gate.Gate
	ids     atomic.Uint64

	ctx    context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc

	warnedPools sync.Map // pool names not configured, logged once each
	janitorDone chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

var (
	_ scheduler.Deliverer    = (*Engine)(nil)
	_ scheduler.RetryDecider = (*Engine)(nil)
)

// New checks cfg and builds an engine. Connections are made on first use.
func New(cfg Config) (*Engine, error) {
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, pools: map[string]*pool{}, gate: gate.New(), janitorDone: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	for name, pc := range cfg.Pools {
		e.pools[name] = newPool(name, pc, cfg.Clock)
	}
	// Delivery ids only need to be unique among the attempts one receiver
	// sees; starting from the clock keeps them from repeating soon after a
	// restart.
	e.ids.Store(uint64(cfg.Clock.Now().UnixNano()))
	m, err := newMetrics(cfg.Registerer, e.pools)
	if err != nil {
		return nil, err
	}
	e.metrics = m
	e.byProto[storepb.Protocol_PROTOCOL_HTTP] = newHTTPTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_GRPC] = newGRPCTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_TCP] = newTCPTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_UDP] = newUDPTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_NATS] = newNATSTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_AMQP] = newAMQPTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_ACTIVEMQ] = newActiveMQTransport(e)
	e.byProto[storepb.Protocol_PROTOCOL_SQS] = newSQSTransport(e)
	go e.janitor()
	return e, nil
}

// transport is one protocol's way of sending attempts.
type transport interface {
	// send starts an attempt that holds a pool slot. It must not block,
	// and must not end the attempt on the caller's goroutine (a failure
	// is reported from another goroutine): the caller may hold the pool's
	// turn.
	send(a *attempt)
	// contextual says the attempt needs a context, cancelled when it ends.
	contextual() bool
	// sweep closes connections unused since before cutoff.
	sweep(cutoff time.Time)
	// close closes every connection; attempts awaiting an answer fail.
	close()
}

// transport is the transport of a protocol that ValidateCallback accepted.
func (e *Engine) transport(p storepb.Protocol) transport { return e.byProto[p] }

func (e *Engine) transports() []transport { return e.byProto[1:] }

// Deliver implements scheduler.Deliverer. It never blocks: the attempt
// waits in its pool, or fails at once (done called before Deliver returns)
// when it cannot be made.
func (e *Engine) Deliver(d scheduler.Delivery, done func(error)) {
	if !e.gate.Enter() {
		e.metrics.record(&attempt{}, ErrClosed)
		done(ErrClosed)
		return
	}
	a := &attempt{e: e, task: d.Task, number: uint32(d.Attempt), term: d.Term, id: e.ids.Add(1), done: done}
	e.withClient(a)
}

// dispatch routes a to its pool once its client is known.
func (e *Engine) dispatch(a *attempt, info *clientInfo) {
	if info.unknown {
		a.reject(permanent(fmt.Errorf("%w %q", ErrUnknownClient, a.task.Client)))
		return
	}
	r, err := info.route, info.routeErr
	if a.task.Callback != nil {
		r, err = e.newRoute(Effective(a.task.Callback, info.callback), info.policy)
	}
	if err != nil {
		a.reject(err)
		return
	}
	if r.protocol == storepb.Protocol_PROTOCOL_UDP && len(a.task.Payload) > MaxUDPPayload {
		a.reject(permanent(fmt.Errorf("%w: payload of %d bytes exceeds the UDP limit of %d", ErrInvalidCallback, len(a.task.Payload), MaxUDPPayload)))
		return
	}
	a.route = r
	if r.protocol == storepb.Protocol_PROTOCOL_HTTP {
		a.signers = info.signersAt(e.cfg.Clock.Now())
	}
	if err := r.pool.submit(a); err != nil {
		a.reject(err)
	}
}

// reject ends an attempt that never got a pool slot.
func (a *attempt) reject(err error) { a.end(err, false) }

// newRoute resolves a callback into a route and checks its endpoint
// against policy; its errors are permanent.
func (e *Engine) newRoute(cb *storepb.Callback, policy *egress.Policy) (route, error) {
	if cb == nil || (cb.Protocol == storepb.Protocol_PROTOCOL_UNSPECIFIED && cb.Endpoint == "") {
		return route{}, permanent(ErrNoCallback)
	}
	if err := ValidateCallback(cb, 0); err != nil {
		return route{}, permanent(fmt.Errorf("%w: %w", ErrInvalidCallback, err))
	}
	r := route{
		protocol: cb.Protocol,
		endpoint: cb.Endpoint,
		key:      cb.Protocol.String() + " " + cb.Endpoint,
		timeout:  e.cfg.DefaultTimeout,
		pool:     e.pool(cb.Pool),
	}
	if cb.TimeoutMs > 0 {
		r.timeout = time.Duration(cb.TimeoutMs) * time.Millisecond
	}
	host, _, _ := net.SplitHostPort(cb.Endpoint)
	if r.protocol == storepb.Protocol_PROTOCOL_HTTP {
		r.url, _ = parseURL(cb.Endpoint) // valid: checked above
		host = r.url.Hostname()
	}
	if h, ok := sinkHost(r.protocol, cb.Endpoint); ok {
		host = h
	}
	if err := policy.CheckEndpoint(host); err != nil {
		return route{}, permanent(err)
	}
	return r, nil
}

func (e *Engine) pool(name string) *pool {
	if name == "" {
		return e.pools[DefaultPool]
	}
	if p := e.pools[name]; p != nil {
		return p
	}
	if _, seen := e.warnedPools.LoadOrStore(name, true); !seen {
		e.cfg.Logger.Warn("delivery: callback names a pool that is not configured; using the default pool", "pool", name)
	}
	return e.pools[DefaultPool]
}

// janitor closes idle connections.
func (e *Engine) janitor() {
	defer close(e.janitorDone)
	every := max(e.cfg.IdleTimeout/2, time.Millisecond)
	ticker := e.cfg.Clock.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case now := <-ticker.Chan():
			for _, t := range e.transports() {
				t.sweep(now.Add(-e.cfg.IdleTimeout))
			}
		}
	}
}

// Close stops taking attempts (Deliver then fails them with ErrClosed),
// fails the attempts waiting in pools with ErrClosed, waits for those
// under way to end, and closes every connection. If ctx ends first, the
// attempts still under way are cut short with ErrClosed. Stop the
// scheduler before closing the engine: the scheduler's Stop waits for the
// attempts under way, which needs the engine. Close may be called more
// than once; later calls return the first one's result.
func (e *Engine) Close(ctx context.Context) error {
	e.closeOnce.Do(func() { e.closeErr = e.close(ctx) })
	return e.closeErr
}

func (e *Engine) close(ctx context.Context) error {
	e.gate.Shut()
	for _, p := range e.pools {
		for _, a := range p.close() {
			a.reject(ErrClosed)
		}
	}
	err := e.gate.Wait(ctx)
	e.cancel() // cuts HTTP and gRPC attempts short, stops the janitor
	for _, t := range e.transports() {
		t.close() // fails TCP attempts awaiting an Ack
	}
	if err != nil {
		// Everything under way now ends promptly: its context is
		// cancelled or its connection closed.
		_ = e.gate.Wait(context.Background())
	}
	<-e.janitorDone
	for _, p := range e.pools {
		<-p.drained
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("delivery: close: attempts cut short: %w", err)
	}
	return err
}

// Stats is a snapshot of the engine's pools.
type Stats struct {
	Pools map[string]PoolStats
}

// Stats returns the state of every pool.
func (e *Engine) Stats() Stats {
	s := Stats{Pools: make(map[string]PoolStats, len(e.pools))}
	for name, p := range e.pools {
		s.Pools[name] = p.stats()
	}
	return s
}

// dialer opens the engine's connections, checking each against the
// server's callback policy.
func (e *Engine) dialer() *egress.Dialer {
	return &egress.Dialer{Policy: e.cfg.Egress, Base: net.Dialer{KeepAlive: 30 * time.Second}}
}

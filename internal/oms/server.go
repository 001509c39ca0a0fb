package oms

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/dispatch"
)

// Server is the Mini-OMS: a TCP listener, one reader and one writer per
// connection, and a dispatch engine whose workers run the pipeline.
// Create one with New, then Start it; Stop drains it.
type Server struct {
	cfg   Config
	log   *slog.Logger
	risk  *risk
	stats *counters
	eng   *dispatch.Engine[order]
	ln    net.Listener

	mu       sync.Mutex
	conns    map[*conn]struct{}
	nextConn uint64
	started  bool
	closing  bool // set by Stop: no new connections

	readers sync.WaitGroup // connection readers
	writers sync.WaitGroup // connection writers
	bg      sync.WaitGroup // accept and stats loops
	quit    chan struct{}  // closed when Stop begins
	force   chan struct{}  // closed when Stop gives up on owed responses

	stopOnce sync.Once
	stopErr  error
}

// New validates cfg and returns a server that is not yet listening. A nil
// log discards log output.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		cfg:   cfg,
		log:   log,
		risk:  newRisk(cfg.Risk),
		conns: make(map[*conn]struct{}),
		quit:  make(chan struct{}),
		force: make(chan struct{}),
	}, nil
}

// Start starts the engine and listens on Config.Listen. ctx bounds only
// the start itself; the server runs until Stop.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	ecfg := s.cfg.engineConfig()
	ecfg.Handler = s.handle
	ecfg.OnAbandon = s.abandoned
	ecfg.OnPanic = s.panicked
	eng, err := dispatch.New(ecfg)
	if err != nil {
		return fmt.Errorf("oms: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		_ = eng.Close(context.Background())
		return fmt.Errorf("oms: %w", err)
	}
	s.eng, s.ln, s.started = eng, ln, true
	s.stats = newCounters(eng.Partitions())
	s.bg.Add(1)
	go s.acceptLoop()
	if s.cfg.StatsInterval > 0 {
		s.bg.Add(1)
		go s.statsLoop()
	}
	s.log.Info("listening", "addr", ln.Addr().String(), "partitions", eng.Partitions(),
		"ring", s.cfg.RingSize, "workers", s.cfg.Workers, "max_pending", s.cfg.MaxPending,
		"exec_min", s.cfg.ExecMin, "exec_max", s.cfg.ExecMax)
	return nil
}

// Addr returns the address the server listens on, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Stop shuts the server down and returns when every connection is closed.
// It is safe to call more than once; later calls return the first result.
//
// The drain: stop accepting connections; stop reading orders (an order
// whose frame was not complete is dropped unanswered: it was never
// accepted); let every accepted order run, for up to DrainTimeout, and
// answer those still waiting after that REJ SHUTTING_DOWN; wait for
// pending executions; write every response; then close each connection
// gracefully (FIN after the last response, input discarded for up to
// CloseLinger so the peer can read everything).
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	s.mu.Lock()
	s.closing = true
	started := s.started
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if !started {
		return nil
	}
	close(s.quit)
	_ = s.ln.Close()
	for _, c := range conns {
		c.stopReading()
	}
	s.readers.Wait()

	var err error
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if s.eng.Close(ctx) != nil {
		err = ErrDrainTimeout
	}
	if !s.waitWriters() {
		err = errors.Join(err, ErrUnanswered)
	}
	s.bg.Wait()
	s.logFinal()
	return err
}

// waitWriters waits for every connection to flush and close. Once the
// engine is closed, the only responses still owed are those of orders
// executing on a timer, so the wait is bounded by ExecMax plus one slow
// write and one linger. Past that it closes what is left and reports
// false: some order was never answered, which would be a bug.
func (s *Server) waitWriters() bool {
	done := make(chan struct{})
	go func() {
		s.writers.Wait()
		close(done)
	}()
	limit := s.cfg.ExecMax + s.cfg.WriteTimeout + s.cfg.CloseLinger + 5*time.Second
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
	}
	s.log.Error("connections still owe responses; closing them", "waited", limit)
	close(s.force)
	<-done
	return false
}

func (s *Server) acceptLoop() {
	defer s.bg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("accept failed; no longer accepting", "err", err)
			}
			return
		}
		s.serve(nc)
	}
}

// serve registers a connection and starts its reader and writer, unless
// Stop has begun.
func (s *Server) serve(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		_ = nc.Close()
		return
	}
	if s.cfg.onConnect != nil {
		s.cfg.onConnect(nc)
	}
	s.nextConn++
	c := newConn(s, nc, s.nextConn)
	s.conns[c] = struct{}{}
	s.stats.connsOpen.Add(1)
	s.readers.Add(1)
	s.writers.Add(1)
	go c.readLoop()
	go c.writeLoop()
}

// forget drops a closed connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.stats.connsOpen.Add(-1)
}

// admit offers a decoded order to the engine. The engine never blocks: an
// order it refuses is answered here, at once, and never enters the
// pipeline.
func (s *Server) admit(o *order) {
	s.stats.received.Add(1)
	o.conn.owed.Add(1)
	key := dispatch.IntKey(o.correlationID)
	err := s.eng.TrySubmit(key, *o)
	switch {
	case err == nil:
	case errors.Is(err, dispatch.ErrBusy):
		s.refuse(o, int32(s.eng.PartitionOf(key)), omsv1.Reason_REASON_BUSY, "partition ring full")
	case errors.Is(err, dispatch.ErrGroupFull):
		s.refuse(o, int32(s.eng.PartitionOf(key)), omsv1.Reason_REASON_GROUP_FULL, "too many orders waiting for this correlation id")
	default:
		s.refuse(o, int32(s.eng.PartitionOf(key)), omsv1.Reason_REASON_SHUTTING_DOWN, "server is shutting down")
	}
}

// abandoned answers an order the engine gave up on when the drain timed
// out.
func (s *Server) abandoned(key dispatch.Key, o order) {
	s.refuse(&o, int32(s.eng.PartitionOf(key)), omsv1.Reason_REASON_SHUTTING_DOWN, "server stopped before the order ran")
}

// panicked answers an order whose pipeline panicked before it responded,
// so even a bug leaves no order unanswered.
func (s *Server) panicked(t dispatch.Task[order], recovered any) {
	o := t.Value()
	s.log.Error("order pipeline panicked", "panic", fmt.Sprint(recovered), "correlation_id", o.correlationID, "client_order_id", o.clientOrderID)
	s.refuse(&o, int32(t.Partition()), omsv1.Reason_REASON_INTERNAL, "internal error")
}

func (s *Server) now() int64 { return s.cfg.Clock.Now().UnixNano() }

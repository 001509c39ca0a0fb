package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
)

// Accept errors other than a closed listener (such as running out of file
// descriptors) are retried after a growing pause.
const (
	minAcceptBackoff = 5 * time.Millisecond
	maxAcceptBackoff = time.Second
	rejectTimeout    = time.Second
)

// tcpServer serves the raw TCP transport: it accepts connections and runs
// a reader and a writer goroutine for each.
type tcpServer struct {
	cfg *Config
	svc *Service
	m   *metrics
	log *slog.Logger
	ln  net.Listener

	stop       chan struct{}   // closed: stop reading, answer what was read, close
	stopCtx    context.Context // cancelled with stop: ends waits for the budget
	cancelStop context.CancelFunc
	wg         sync.WaitGroup
	budget     *byteBudget // over every connection

	mu        sync.Mutex
	conns     map[*conn]struct{}
	pending   int            // connections that have not logged in
	pendingBy map[string]int // the same by source (auth.SourceKey)
	nextID    uint64
}

func newTCPServer(cfg *Config, svc *Service, m *metrics, ln net.Listener) *tcpServer {
	t := &tcpServer{cfg: cfg, svc: svc, m: m, log: cfg.Logger, ln: ln, stop: make(chan struct{}),
		budget: newByteBudget(cfg.MaxBufferBytes), conns: map[*conn]struct{}{}, pendingBy: map[string]int{}}
	t.stopCtx, t.cancelStop = context.WithCancel(context.Background())
	return t
}

func (t *tcpServer) start() {
	t.wg.Add(1)
	go t.acceptLoop()
}

func (t *tcpServer) acceptLoop() {
	defer t.wg.Done()
	var backoff time.Duration
	for {
		nc, err := t.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(minAcceptBackoff, 2*backoff), maxAcceptBackoff)
			t.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-t.stop:
				return
			}
			continue
		}
		backoff = 0
		t.admit(nc)
	}
}

// admit starts serving nc, or refuses it with an error frame when the
// server is at its connection limit, has as many connections waiting to
// log in as it allows (in all or from nc's source), or is stopping.
func (t *tcpServer) admit(nc net.Conn) {
	source := auth.SourceKey(nc.RemoteAddr().String())
	t.mu.Lock()
	var refusal error
	select {
	case <-t.stop:
		refusal = ErrStopping
	default:
		switch {
		case len(t.conns) >= t.cfg.MaxConnections:
			refusal = ErrTooManyConnections
		case t.pending >= t.cfg.MaxPendingLogins || t.pendingBy[source] >= t.cfg.MaxPendingLoginsPerAddr:
			refusal = ErrTooManyPendingLogins
		}
	}
	if refusal != nil {
		t.mu.Unlock()
		t.wg.Add(1)
		go t.refuse(nc, refusal)
		return
	}
	t.nextID++
	c := newConn(t, nc, t.nextID)
	t.conns[c] = struct{}{}
	t.pending++
	t.pendingBy[source]++
	t.wg.Add(2)
	t.mu.Unlock()
	t.m.connections.Inc()
	go c.readLoop()
	go c.writeLoop()
}

func (t *tcpServer) refuse(nc net.Conn, err error) {
	defer t.wg.Done()
	_ = nc.SetWriteDeadline(time.Now().Add(rejectTimeout))
	_, _ = protodelim.MarshalTo(nc, connError(err))
	_ = nc.Close()
}

func (t *tcpServer) forget(c *conn) {
	t.loggedIn(c)
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	t.m.connections.Dec()
}

// loggedIn stops counting c as waiting to log in; it runs once per
// connection, at its first login or when it closes.
func (t *tcpServer) loggedIn(c *conn) {
	if !c.pendingDone.CompareAndSwap(false, true) {
		return
	}
	source := auth.SourceKey(c.source)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	if t.pendingBy[source]--; t.pendingBy[source] == 0 {
		delete(t.pendingBy, source)
	}
}

// shutdown stops accepting and reading, lets every request already read
// be answered, and closes each connection after its last response and a
// shutdown error frame. If ctx ends first, connections are cut at once.
func (t *tcpServer) shutdown(ctx context.Context) error {
	t.mu.Lock()
	close(t.stop)
	t.cancelStop()
	_ = t.ln.Close()
	for c := range t.conns {
		c.interrupt()
	}
	t.mu.Unlock()

	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	for c := range t.conns {
		c.abort()
	}
	t.mu.Unlock()
	<-done
	return ctx.Err()
}

func (t *tcpServer) stopping() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// connError is the error frame sent before a connection closes.
func connError(err error) *boomerangv1.Response {
	return &boomerangv1.Response{Error: ErrorOf(err)}
}

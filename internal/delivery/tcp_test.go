package delivery

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func tcpCallback(addr string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: addr}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// tcpReceiver serves a client.TCPReceiver on loopback.
func tcpReceiver(t *testing.T, h client.Handler) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveTCPReceiver(t, ln, h)
}

func serveTCPReceiver(t *testing.T, ln net.Listener, h client.Handler) *countingListener {
	t.Helper()
	r, err := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Serve(cl)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("receiver Close: %v", err)
		}
		<-done
	})
	return cl
}

func TestTCPPipelinesOnPooledConnections(t *testing.T) {
	const n = 2000
	var running, peak atomic.Int32
	gate := make(chan struct{})
	var seen sync.Map
	ln := tcpReceiver(t, func(_ context.Context, d *boomerangv1.Delivery) error {
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		<-gate
		running.Add(-1)
		if d.Term != testTerm {
			return fmt.Errorf("term %d, want %d", d.Term, testTerm)
		}
		seen.Store(d.TaskId, d)
		return nil
	})
	e, _ := newEngine(t, tcpCallback(ln.Addr().String()), func(c *Config) { c.TCPConns = 2 })
	outs := make([]outcome, n)
	tasks := make([]*storepb.Task, n)
	for i := range n {
		tasks[i] = task("p")
		outs[i] = deliver(e, tasks[i], 1)
	}
	// Many deliveries are in the receiver's hands at once: pipelined.
	eventually(t, "concurrent handlers", func() bool { return peak.Load() >= 100 })
	close(gate)
	for i, o := range outs {
		if err := o.wait(t); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if _, ok := seen.Load(tasks[i].Id); !ok {
			t.Fatalf("task %d acknowledged but never handled", tasks[i].Id)
		}
	}
	if got := ln.accepted.Load(); got < 1 || got > 2 {
		t.Fatalf("%d connections for one endpoint, want 1 or 2", got)
	}
}

func TestTCPHandlerErrorIsRetried(t *testing.T) {
	ln := tcpReceiver(t, func(context.Context, *boomerangv1.Delivery) error { return errors.New("disk full") })
	e, _ := newEngine(t, tcpCallback(ln.Addr().String()), nil)
	tk := task("x")
	err := deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("outcome %v, want rejected: disk full", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a failed ack is not retried")
	}
}

func TestTCPSlowReceiverTimesOutAndLateAckIsIgnored(t *testing.T) {
	release := make(chan struct{})
	handled := make(chan struct{}, 2)
	ln := tcpReceiver(t, func(_ context.Context, d *boomerangv1.Delivery) error {
		if string(d.Payload) == "slow" {
			<-release
		}
		handled <- struct{}{}
		return nil
	})
	cb := tcpCallback(ln.Addr().String())
	cb.TimeoutMs = 100
	e, _ := newEngine(t, cb, func(c *Config) { c.TCPConns = 1 })
	if err := deliver(e, task("slow"), 1).wait(t); !errors.Is(err, ErrTimeout) {
		t.Fatalf("outcome %v, want a timeout", err)
	}
	close(release)
	<-handled // its late Ack is on its way, for an attempt that has ended
	if err := deliver(e, task("fast"), 1).wait(t); err != nil {
		t.Fatalf("the connection is unusable after a late ack: %v", err)
	}
	tr := e.transport(storepb.Protocol_PROTOCOL_TCP).(*tcpTransport)
	tr.mu.Lock()
	ep := tr.endpoints[ln.Addr().String()]
	tr.mu.Unlock()
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for _, c := range ep.conns {
		c.mu.Lock()
		left := len(c.pending)
		c.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d attempts left pending after their end", left)
		}
	}
}

// faultyReceiver accepts connections and runs serve on each.
func faultyReceiver(t *testing.T, ln net.Listener, serve func(net.Conn)) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
}

func TestTCPReceiverDiesMidDelivery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	faultyReceiver(t, ln, func(c net.Conn) {
		br := bufio.NewReader(c)
		var d boomerangv1.Delivery
		if conns.Add(1) == 1 {
			// Reads the delivery, then dies without an Ack.
			_ = protodelim.UnmarshalFrom(br, &d)
			return
		}
		for protodelim.UnmarshalFrom(br, &d) == nil {
			if _, err := protodelim.MarshalTo(c, &boomerangv1.Ack{DeliveryId: d.DeliveryId, Ok: true}); err != nil {
				return
			}
		}
	})
	e, _ := newEngine(t, tcpCallback(ln.Addr().String()), func(c *Config) { c.TCPConns = 1 })
	tk := task("x")
	err = deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("outcome %v, want connection lost", err)
	}
	if _, retry := e.Next(tk, 1, err); !retry {
		t.Fatal("a lost connection is not retried")
	}
	// The next attempt dials a new connection.
	if err := deliver(e, tk, 2).wait(t); err != nil {
		t.Fatalf("retry after reconnect: %v", err)
	}
}

func TestTCPMalformedAckBreaksTheConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	faultyReceiver(t, ln, func(c net.Conn) {
		var d boomerangv1.Delivery
		if protodelim.UnmarshalFrom(bufio.NewReader(c), &d) == nil {
			_, _ = c.Write([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}) // length overflows
			_, _ = c.Read(make([]byte, 1))                                                           // wait for the engine to hang up
		}
	})
	e, _ := newEngine(t, tcpCallback(ln.Addr().String()), nil)
	err = deliver(e, task("x"), 1).wait(t)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "bad frame length") {
		t.Fatalf("outcome %v, want connection lost: bad frame length", err)
	}
}

func TestTCPRefusedThenRedialsAfterBackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	clock := clockwork.NewFakeClock()
	e, _ := newEngine(t, tcpCallback(addr), func(c *Config) {
		c.Clock = clock
		c.RedialMin, c.RedialMax = time.Second, 4*time.Second
	})
	tk := task("x")
	err = deliver(e, tk, 1).wait(t)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("outcome %v, want refused", err)
	}
	// Within the backoff the endpoint is not dialled again: attempts fail
	// at once, with the dial error.
	err = deliver(e, tk, 2).wait(t)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "redialling in") {
		t.Fatalf("outcome %v, want a fast failure while redialling", err)
	}
	// The receiver comes up on the same port.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port was taken meanwhile: %v", err)
	}
	serveTCPReceiver(t, ln, func(context.Context, *boomerangv1.Delivery) error { return nil })
	err = deliver(e, tk, 3).wait(t)
	if !strings.Contains(err.Error(), "redialling in") {
		t.Fatalf("outcome %v, want still redialling before the backoff ends", err)
	}
	clock.Advance(time.Second)
	if err := deliver(e, tk, 4).wait(t); err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
}

func TestTCPRedialBackoffGrows(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	clock := clockwork.NewFakeClock()
	e, _ := newEngine(t, tcpCallback(addr), func(c *Config) {
		c.Clock = clock
		c.RedialMin, c.RedialMax = time.Second, 4*time.Second
	})
	tr := e.transport(storepb.Protocol_PROTOCOL_TCP).(*tcpTransport)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		before := clock.Now()
		if err := deliver(e, task("x"), 1).wait(t); !strings.Contains(err.Error(), "refused") {
			t.Fatalf("dial %d: %v", i, err)
		}
		tr.mu.Lock()
		ep := tr.endpoints[addr]
		tr.mu.Unlock()
		ep.mu.Lock()
		wait := ep.downUntil.Sub(before)
		ep.mu.Unlock()
		if wait > want || wait < want*8/10 {
			t.Fatalf("backoff after failure %d: %v, want %v less up to 20%% jitter", i+1, wait, want)
		}
		clock.Advance(wait)
	}
}

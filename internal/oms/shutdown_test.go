package oms

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// Stop under load: clients keep sending while the server stops. Every
// order the server read is answered, every answer reaches its client
// before the connection closes, and nothing is answered twice.
func TestStopUnderLoad(t *testing.T) {
	t.Parallel()
	// MaxPending keeps the backlog, and so the drain, short.
	// A long close linger: a client reads every answer before it sees the
	// server hang up and stops sending, however slow the machine; until
	// then its orders must be drained, not reset. It half-closes once it
	// stops, which ends the linger.
	// A large outbox: a client whose reader a loaded machine starves for a
	// moment while its writer goes on must not be cut off as a slow
	// consumer (TestSlowConsumerDisconnected's subject), which resets its connection.
	srv, err := New(Config{Listen: "127.0.0.1:0", ExecMin: 0, ExecMax: 2e6, MaxPending: 20, CloseLinger: time.Minute,
		OutboxLimit: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	const conns = 3
	var wg sync.WaitGroup
	answers := make([]int, conns)
	sent := make([]int, conns)
	errs := make(chan error, conns)
	for i := range conns {
		nc, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// A client stops sending once the server has hung up, as a real
		// one would: one that kept writing past the server's close linger
		// would be reset, and a reset may reach it before the answers.
		var hungUp atomic.Bool
		wg.Go(func() {
			sent[i] = pump(nc, int64(i*100), &hungUp)
			_ = nc.(*net.TCPConn).CloseWrite()
		})
		wg.Go(func() {
			n, err := drainAnswers(nc)
			hungUp.Store(true)
			answers[i] = n
			errs <- err
		})
	}
	// Every connection accepted first: one still in the listen queue when
	// Stop closes the listener is reset by the kernel.
	waitFor(t, "every connection accepted", func() bool { return srv.Stats().OpenConns == conns })
	waitFor(t, "load to build up", func() bool { return srv.Stats().Received > 3000 })
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := srv.Stats()
	total := 0
	for i := range conns {
		total += answers[i]
		if answers[i] > sent[i] {
			t.Errorf("connection %d: %d answers for %d orders", i, answers[i], sent[i])
		}
	}
	if st.Received != st.Answered || st.Dropped != 0 || uint64(total) != st.Answered {
		t.Fatalf("server read %d, answered %d, dropped %d; clients got %d", st.Received, st.Answered, st.Dropped, total)
	}
	if _, err := net.Dial("tcp", srv.Addr().String()); err == nil {
		t.Fatal("a stopped server still accepts connections")
	}
}

// pump sends orders for 10 accounts until the connection fails or stop
// is set, and returns how many it wrote.
func pump(nc net.Conn, firstAccount int64, stop *atomic.Bool) int {
	var buf []byte
	n := 0
	for seq := uint64(1); !stop.Load(); seq++ {
		buf = buf[:0]
		for a := range int64(10) {
			b, _ := protodelimBytes(valid(firstAccount+a+1, seq))
			buf = append(buf, b...)
		}
		if _, err := nc.Write(buf); err != nil {
			return n
		}
		n += 10
	}
	return n
}

// drainAnswers reads answers until the server closes the connection,
// checking per-account order of the ACKs and that none is a duplicate.
func drainAnswers(nc net.Conn) (int, error) {
	br := bufio.NewReader(nc)
	last := map[int64]uint64{}
	seen := map[[2]uint64]bool{}
	n := 0
	for {
		var r omsv1.Response
		err := protodelim.UnmarshalFrom(br, &r)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		id := [2]uint64{uint64(r.GetCorrelationId()), r.GetSeqInFamily()}
		if seen[id] {
			return n, errors.New("duplicate answer " + r.String())
		}
		seen[id] = true
		switch r.GetReason() {
		case groupFull:
		case ack:
			if a := r.GetCorrelationId(); r.GetSeqInFamily() <= last[a] {
				return n, errors.New("answer out of order " + r.String())
			}
			last[r.GetCorrelationId()] = r.GetSeqInFamily()
		default:
			return n, errors.New("unexpected answer " + r.String())
		}
	}
}

// When accepted orders cannot all run within DrainTimeout, the rest are
// answered SHUTTING_DOWN; still exactly one answer each.
func TestStopDrainTimeout(t *testing.T) {
	t.Parallel()
	clock := newLogicalClock(true)
	srv, err := New(Config{Listen: "127.0.0.1:0", ExecMin: 1e6, ExecMax: 1e6, DrainTimeout: 1e6, CloseLinger: 1e6, Clock: clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv)
	for seq := uint64(1); seq <= 50; seq++ {
		c.send(valid(9, seq))
	}
	clock.waitPending(t, 1)
	waitFor(t, "every order admitted", func() bool { return srv.Stats().Received == 50 })

	stopped := make(chan error, 1)
	go func() { stopped <- srv.Stop() }()
	// The engine gives up on orders 2-50; order 1 is still executing.
	got := c.recvN(49)
	for i, r := range got {
		if r.GetReason() != shutdown || r.GetSeqInFamily() != uint64(i+2) {
			t.Fatalf("answer %d: %v, want SHUTTING_DOWN for seq %d", i, r, i+2)
		}
	}
	clock.fire()
	rest := c.recvUntilEOF()
	if len(rest) != 1 || rest[0].GetReason() != ack || rest[0].GetSeqInFamily() != 1 {
		t.Fatalf("after the refusals got %v, want the ACK of seq 1", rest)
	}
	if err := <-stopped; !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("Stop returned %v, want ErrDrainTimeout", err)
	}
	if err := srv.Stop(); !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("second Stop returned %v, want the first result", err)
	}
}

// Stop before Start, and Start twice, are harmless.
func TestLifecycleMisuse(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{Listen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := srv.Stats(); st.Received != 0 || st.Partitions != nil {
		t.Fatalf("Stats before Start: %+v", st)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	srv2 := start(t, Config{})
	if err := srv2.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start returned %v, want ErrStarted", err)
	}
}

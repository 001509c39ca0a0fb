package oms

import (
	"net"
	"testing"
	"time"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// With execution held, one account's orders pile up: one executes,
// MaxQueued wait in the engine, the ring holds a few more, and the rest
// are answered BUSY at once. Every order is answered exactly once, the
// accepted ones in order, and the server then serves others as before.
func TestTinyRingAnswersBusy(t *testing.T) {
	t.Parallel()
	clock := newLogicalClock(true)
	srv := start(t, Config{Partitions: 1, RingSize: 2, MaxQueued: 4, ExecMin: 1e6, ExecMax: 1e6, Clock: clock})
	c := dial(t, srv)
	const n = 40
	var orders []*omsv1.Order
	for seq := uint64(1); seq <= n; seq++ {
		orders = append(orders, valid(1, seq))
	}
	c.send(orders...)

	// Nothing can be ACKed while execution is held, so once every order
	// is admitted, the answers waiting for us are exactly the BUSY ones.
	waitFor(t, "every order admitted", func() bool { return srv.Stats().Received == n })
	busyCount := int(srv.Stats().Rejects[busy])
	// At most 1 executing + 4 queued + 2 in the ring are accepted.
	if minBusy := n - 1 - 4 - 2; busyCount < minBusy {
		t.Fatalf("%d BUSY answers, want at least %d", busyCount, minBusy)
	}
	answered := map[uint64]bool{}
	for _, r := range c.recvN(busyCount) {
		if r.GetReason() != busy || r.GetPartition() != 0 || answered[r.GetSeqInFamily()] {
			t.Fatalf("answer %v: want one BUSY naming partition 0 per refused order", r)
		}
		answered[r.GetSeqInFamily()] = true
	}
	var lastAck uint64
	for range n - busyCount {
		clock.waitPending(t, 1)
		clock.fire()
		r := c.recv()
		if r.GetReason() != ack || answered[r.GetSeqInFamily()] || r.GetSeqInFamily() <= lastAck {
			t.Fatalf("answer %v after ACK of seq %d: want ACKs of the accepted orders, in order", r, lastAck)
		}
		answered[r.GetSeqInFamily()] = true
		lastAck = r.GetSeqInFamily()
	}
	if st := srv.Stats(); st.Partitions[0].RejectedBusy != uint64(busyCount) || st.Acks != uint64(n-busyCount) {
		t.Errorf("engine counts %d BUSY and %d ACK; client saw %d and %d", st.Partitions[0].RejectedBusy, st.Acks, busyCount, n-busyCount)
	}

	// Still responsive.
	c2 := dial(t, srv)
	c2.send(valid(2, 1))
	clock.waitPending(t, 1)
	clock.fire()
	if r := c2.recv(); r.GetReason() != ack {
		t.Fatalf("after the flood, a new order got %v", r)
	}
}

// MaxPending bounds one account's waiting orders; the excess is answered
// GROUP_FULL at once while other accounts are untouched.
func TestGroupFull(t *testing.T) {
	t.Parallel()
	clock := newLogicalClock(true)
	srv := start(t, Config{MaxPending: 2, ExecMin: 1e6, ExecMax: 1e6, Clock: clock})
	c := dial(t, srv)
	var orders []*omsv1.Order
	for seq := uint64(1); seq <= 10; seq++ {
		orders = append(orders, valid(1, seq))
	}
	c.send(orders...)
	// Orders 1-2 or 1-3 are accepted (order 1 counts until it starts);
	// the rest are refused at once, before anything is executed.
	waitFor(t, "every order admitted", func() bool { return srv.Stats().Received == 10 })
	refused := int(srv.Stats().Rejects[groupFull])
	if refused != 7 && refused != 8 {
		t.Fatalf("%d orders refused GROUP_FULL, want 7 or 8", refused)
	}
	for _, r := range c.recvN(refused) {
		if r.GetReason() != groupFull || r.GetCorrelationId() != 1 {
			t.Fatalf("answer %v before any execution finished, want GROUP_FULL for account 1", r)
		}
	}
	c.send(valid(2, 1)) // another account is not affected
	for left := 10 - refused + 1; left > 0; {
		clock.waitPending(t, 1)
		for range clock.fire() {
			if r := c.recv(); r.GetReason() != ack {
				t.Fatalf("accepted order answered %v", r)
			}
			left--
		}
	}
}

// A client that stops reading is disconnected once its outbox overflows,
// or once a write has blocked for WriteTimeout; its responses are dropped
// and counted, and other clients do not notice.
func TestSlowConsumerDisconnected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		outbox       int
		writeTimeout time.Duration
	}{
		{"outbox overflows", 16, time.Minute},
		{"write times out", DefaultOutboxLimit, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := start(t, Config{
				ExecMax:      0,
				OutboxLimit:  tt.outbox,
				WriteTimeout: tt.writeTimeout,
				// Tiny socket buffers, so a few hundred unread responses fill them.
				onConnect: func(nc net.Conn) { nc.(*net.TCPConn).SetWriteBuffer(4096) },
			})
			slow := dial(t, srv)
			slow.nc.(*net.TCPConn).SetReadBuffer(4096)
			fast := dial(t, srv)

			var buf []byte
			for seq := uint64(1); seq <= 500; seq++ {
				b, _ := protodelimBytes(valid(1, seq))
				buf = append(buf, b...)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				// The server closes the connection before all of this is
				// written; that is the point.
				for range 20 {
					if _, err := slow.nc.Write(buf); err != nil {
						return
					}
				}
			}()
			waitFor(t, "the slow consumer to be dropped", func() bool { return srv.Stats().SlowConsumers == 1 })
			<-done

			fast.send(valid(2, 1))
			if r := fast.recv(); r.GetReason() != ack {
				t.Fatalf("fast client got %v", r)
			}
			waitFor(t, "the slow connection to close", func() bool { return srv.Stats().OpenConns == 1 })
			st := srv.Stats()
			if st.Dropped == 0 || st.Received != st.Answered+st.Dropped {
				t.Fatalf("received %d, answered %d, dropped %d: every order is answered or counted dropped", st.Received, st.Answered, st.Dropped)
			}
		})
	}
}

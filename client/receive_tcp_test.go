package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

const receiverWait = 20 * time.Second

// serveTCP runs r on a loopback listener and returns its address; the
// test closes r.
func serveTCP(t *testing.T, r *TCPReceiver) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), receiverWait)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrReceiverClosed) {
			t.Errorf("Serve returned %v, want ErrReceiverClosed", err)
		}
	})
	return ln.Addr().String()
}

// serverConn is the server's side of a connection to a receiver.
type serverConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialReceiver(t *testing.T, addr string) *serverConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(receiverWait))
	return &serverConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *serverConn) send(ds ...*boomerangv1.Delivery) {
	c.t.Helper()
	var buf bytes.Buffer
	for _, d := range ds {
		if _, err := protodelim.MarshalTo(&buf, d); err != nil {
			c.t.Fatal(err)
		}
	}
	if _, err := c.nc.Write(buf.Bytes()); err != nil {
		c.t.Fatal(err)
	}
}

func (c *serverConn) ack() *boomerangv1.Ack {
	c.t.Helper()
	a := &boomerangv1.Ack{}
	if err := protodelim.UnmarshalFrom(c.br, a); err != nil {
		c.t.Fatalf("reading an ack: %v", err)
	}
	return a
}

func TestTCPReceiverAcksOutOfOrder(t *testing.T) {
	release := map[uint64]chan struct{}{1: make(chan struct{}), 2: make(chan struct{}), 3: make(chan struct{})}
	r, err := NewTCPReceiver(TCPReceiverConfig{Handler: func(_ context.Context, d *boomerangv1.Delivery) error {
		<-release[d.DeliveryId]
		if string(d.Payload) == "bad" {
			return errors.New("rejected")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := dialReceiver(t, serveTCP(t, r))
	c.send(&boomerangv1.Delivery{DeliveryId: 1, Payload: []byte("a")},
		&boomerangv1.Delivery{DeliveryId: 2, Payload: []byte("bad")},
		&boomerangv1.Delivery{DeliveryId: 3, Payload: []byte("c")})
	// All three run at once; acks follow the handlers' order.
	close(release[3])
	if a := c.ack(); a.DeliveryId != 3 || !a.Ok {
		t.Fatalf("first ack %v, want 3 ok", a)
	}
	close(release[2])
	if a := c.ack(); a.DeliveryId != 2 || a.Ok || a.Error != "rejected" {
		t.Fatalf("second ack %v, want 2 failed", a)
	}
	close(release[1])
	if a := c.ack(); a.DeliveryId != 1 || !a.Ok {
		t.Fatalf("third ack %v, want 1 ok", a)
	}
}

func TestTCPReceiverCloseFinishesHandlersUnderWay(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	r, _ := NewTCPReceiver(TCPReceiverConfig{Handler: func(context.Context, *boomerangv1.Delivery) error {
		close(started)
		<-release
		return nil
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ln) }()
	c := dialReceiver(t, ln.Addr().String())
	c.send(&boomerangv1.Delivery{DeliveryId: 5})
	<-started
	closed := make(chan error, 1)
	go func() { closed <- r.Close(context.Background()) }()
	if err := <-served; !errors.Is(err, ErrReceiverClosed) {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a handler under way", err)
	default:
	}
	close(release)
	if a := c.ack(); a.DeliveryId != 5 || !a.Ok {
		t.Fatalf("ack %v, want 5 ok: the handler's ack is written before the connection closes", a)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after Close: %v, want EOF", err)
	}
}

func TestTCPReceiverCloseGivesUp(t *testing.T) {
	started := make(chan struct{})
	r, _ := NewTCPReceiver(TCPReceiverConfig{Handler: func(ctx context.Context, _ *boomerangv1.Delivery) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.Serve(ln) }()
	c := dialReceiver(t, ln.Addr().String())
	c.send(&boomerangv1.Delivery{DeliveryId: 1})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want the deadline", err)
	}
	<-served
}

func TestTCPReceiverHangUpCancelsHandlers(t *testing.T) {
	cancelled := make(chan struct{})
	r, _ := NewTCPReceiver(TCPReceiverConfig{Handler: func(ctx context.Context, _ *boomerangv1.Delivery) error {
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	}})
	c := dialReceiver(t, serveTCP(t, r))
	c.send(&boomerangv1.Delivery{DeliveryId: 1})
	_ = c.nc.Close()
	select {
	case <-cancelled:
	case <-time.After(receiverWait):
		t.Fatal("the handler's context was not cancelled when the server hung up")
	}
}

func TestTCPReceiverBadFramesCloseTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"too large", []byte{0x80, 0x80, 0x80, 0x10}}, // 32 MiB > 1 KiB
		{"not a delivery", []byte{3, 0xff, 0xff, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := NewTCPReceiver(TCPReceiverConfig{MaxFrame: 1024, Handler: func(context.Context, *boomerangv1.Delivery) error {
				t.Error("the handler ran")
				return nil
			}})
			c := dialReceiver(t, serveTCP(t, r))
			if _, err := c.nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if _, err := c.br.ReadByte(); err == nil {
				t.Fatal("the receiver answered a bad frame")
			}
		})
	}
}

func TestTCPReceiverBoundsHandlersPerConnection(t *testing.T) {
	running := make(chan struct{}, 10)
	release := make(chan struct{})
	r, _ := NewTCPReceiver(TCPReceiverConfig{MaxInFlight: 2, Handler: func(context.Context, *boomerangv1.Delivery) error {
		running <- struct{}{}
		<-release
		return nil
	}})
	c := dialReceiver(t, serveTCP(t, r))
	for i := range 5 {
		c.send(&boomerangv1.Delivery{DeliveryId: uint64(i + 1)})
	}
	<-running
	<-running
	select {
	case <-running:
		t.Fatal("a third handler ran with MaxInFlight 2")
	case <-time.After(50 * time.Millisecond): // a check that nothing happens, not a synchronization
	}
	close(release)
	for range 5 {
		if a := c.ack(); !a.Ok {
			t.Fatalf("ack %v", a)
		}
	}
}

func FuzzReadDelivery(f *testing.F) {
	var buf bytes.Buffer
	_, _ = protodelim.MarshalTo(&buf, &boomerangv1.Delivery{DeliveryId: 1, TaskId: 2, Payload: []byte("p"), Group: "g"})
	f.Add(buf.Bytes())
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{5, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		for range 100 {
			d, err := readDelivery(br, 1024)
			if err != nil {
				return
			}
			if d == nil {
				t.Fatal("nil delivery without an error")
			}
		}
	})
}

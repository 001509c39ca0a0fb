package client

import (
	"context"
	"errors"
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

func TestUDPReceiver(t *testing.T) {
	got := make(chan *boomerangv1.Delivery, 10)
	r, err := NewUDPReceiver(UDPReceiverConfig{Handler: func(_ context.Context, d *boomerangv1.Delivery) error {
		got <- d
		if string(d.Payload) == "fail" {
			return errors.New("no")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.Serve(pc) }()
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(b []byte) {
		t.Helper()
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"one", "fail"} {
		b, _ := proto.Marshal(&boomerangv1.Delivery{DeliveryId: 1, TaskId: 7, Payload: []byte(p)})
		send(b)
		if d := <-got; string(d.Payload) != p || d.TaskId != 7 {
			t.Fatalf("handler got %v", d)
		}
	}
	send([]byte{0xff, 0xff, 0xff})
	b, _ := proto.Marshal(&boomerangv1.Delivery{DeliveryId: 2, Payload: []byte("after")})
	send(b)
	if d := <-got; string(d.Payload) != "after" {
		t.Fatalf("handler got %v", d)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrReceiverClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if s := r.Stats(); s.Received != 3 || s.Undecodable != 1 || s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

package delivery

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func udpCallback(addr string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_UDP, Endpoint: addr}
}

func udpReceiver(t *testing.T, h client.Handler) (string, *client.UDPReceiver) {
	t.Helper()
	return udpReceiverInFlight(t, h, 0)
}

func udpReceiverInFlight(t *testing.T, h client.Handler, inFlight int) (string, *client.UDPReceiver) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.NewUDPReceiver(client.UDPReceiverConfig{Handler: h, MaxInFlight: inFlight})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Serve(pc)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("receiver Close: %v", err)
		}
		<-done
	})
	return pc.LocalAddr().String(), r
}

func TestUDPDeliversOneDatagram(t *testing.T) {
	got := make(chan *boomerangv1.Delivery, 1)
	addr, _ := udpReceiver(t, func(_ context.Context, d *boomerangv1.Delivery) error {
		got <- d
		return nil
	})
	e, _ := newEngine(t, udpCallback(addr), nil)
	tk := task("datagram")
	tk.Group = "g"
	if err := deliver(e, tk, 1).wait(t); err != nil {
		t.Fatalf("delivery failed: %v", err)
	}
	d := <-got
	if d.TaskId != tk.Id || d.Attempt != 1 || d.Group != "g" || string(d.Payload) != "datagram" || d.FireAtMs != tk.DueMs || d.Term != testTerm {
		t.Fatalf("receiver got %v", d)
	}
}

func TestUDPCountsSentAsDelivered(t *testing.T) {
	// Nothing listens: UDP cannot know, and the first datagram counts as
	// delivered. That is what at most once means.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	e, _ := newEngine(t, udpCallback(addr), nil)
	if err := deliver(e, task("lost"), 1).wait(t); err != nil {
		t.Fatalf("outcome %v, want delivered once sent", err)
	}
}

func TestUDPPayloadLimit(t *testing.T) {
	addr, r := udpReceiver(t, func(context.Context, *boomerangv1.Delivery) error { return nil })
	e, clients := newEngine(t, udpCallback(addr), nil)
	longest := strings.Repeat("c", scheduler.MaxClientLen)
	clients.put(&storepb.Client{Id: longest, Callback: udpCallback(addr)})
	big := task(strings.Repeat("x", MaxUDPPayload))
	big.Group = strings.Repeat("g", scheduler.MaxGroupLen)
	big.Client = longest
	if err := deliver(e, big, 1).wait(t); err != nil {
		t.Fatalf("a payload of exactly MaxUDPPayload with the longest group: %v", err)
	}
	eventually(t, "the largest datagram to arrive", func() bool { return r.Stats().Received == 1 })
	tooBig := task(strings.Repeat("x", MaxUDPPayload+1))
	err := deliver(e, tooBig, 1).wait(t)
	if !errors.Is(err, ErrInvalidCallback) || !IsPermanent(err) {
		t.Fatalf("outcome %v, want a permanent invalid callback", err)
	}
	if fe, ok := errors.AsType[*scheduler.FieldError](ValidateCallback(udpCallback(addr), MaxUDPPayload+1)); !ok || fe.Field != "payload" {
		t.Fatalf("ValidateCallback: %v, want a payload field error", fe)
	}
	if err := ValidateCallback(udpCallback(addr), MaxUDPPayload); err != nil {
		t.Fatalf("ValidateCallback at the limit: %v", err)
	}
}

package delivery

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// grpcServer serves mux over h2c on loopback and returns its address.
func grpcServer(t *testing.T, mux http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

func grpcReceiver(t *testing.T, h client.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(client.NewGRPCReceiver(h).Handler())
	return grpcServer(t, mux)
}

func grpcCallback(addr string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_GRPC, Endpoint: addr}
}

func TestGRPCDelivers(t *testing.T) {
	got := make(chan *boomerangv1.Delivery, 1)
	addr := grpcReceiver(t, func(_ context.Context, d *boomerangv1.Delivery) error {
		got <- d
		return nil
	})
	e, _ := newEngine(t, grpcCallback(addr), nil)
	tk := task("ping")
	tk.Group = "g1"
	if err := deliver(e, tk, 2).wait(t); err != nil {
		t.Fatalf("delivery failed: %v", err)
	}
	d := <-got
	if d.TaskId != tk.Id || d.Attempt != 2 || d.Group != "g1" || d.Client != "acme" || string(d.Payload) != "ping" ||
		d.FireAtMs != tk.DueMs || d.DeliveryId == 0 || d.SentMs == 0 || d.Term != testTerm {
		t.Fatalf("receiver got %v", d)
	}
}

func TestGRPCFailures(t *testing.T) {
	failing := grpcReceiver(t, func(context.Context, *boomerangv1.Delivery) error {
		return errors.New("not today")
	})
	unimplemented := grpcServer(t, http.NewServeMux())
	slow := grpcReceiver(t, func(ctx context.Context, _ *boomerangv1.Delivery) error {
		<-ctx.Done()
		return ctx.Err()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
	// A receiver that dies once the call has arrived: it reads the
	// request, then the connection goes away.
	dying, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	faultyReceiver(t, dying, func(c net.Conn) {
		buf := make([]byte, 1<<16)
		_, _ = c.Read(buf)
	})

	for _, tc := range []struct {
		name, addr string
		is         error
		retry      bool
		text       string
	}{
		{"ack not ok", failing, ErrRejected, true, "not today"},
		{"service not implemented", unimplemented, ErrRejected, false, "unimplemented"},
		{"slow receiver", slow, ErrTimeout, true, "timed out"},
		{"refused connection", refused, ErrUnreachable, true, "unavailable"},
		{"receiver dies mid-delivery", dying.Addr().String(), ErrUnreachable, true, "gRPC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cb := grpcCallback(tc.addr)
			cb.TimeoutMs = 200
			e, _ := newEngine(t, cb, nil)
			tk := task("x")
			err := deliver(e, tk, 1).wait(t)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("outcome %v, want %v mentioning %q", err, tc.is, tc.text)
			}
			if _, retry := e.Next(tk, 1, err); retry != tc.retry {
				t.Fatalf("retry %v, want %v", retry, tc.retry)
			}
		})
	}
}

func TestGRPCSharesOneConnection(t *testing.T) {
	accepted := make(chan struct{}, 100)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(client.NewGRPCReceiver(func(context.Context, *boomerangv1.Delivery) error { return nil }).Handler())
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted <- struct{}{}
		}
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-done
	}()
	e, _ := newEngine(t, grpcCallback(ln.Addr().String()), nil)
	// One first, so the connection exists before the concurrent burst.
	if err := deliver(e, task("x"), 1).wait(t); err != nil {
		t.Fatal(err)
	}
	var outs []outcome
	for range 50 {
		outs = append(outs, deliver(e, task("x"), 1))
	}
	for _, o := range outs {
		if err := o.wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(accepted); n != 1 {
		t.Fatalf("51 calls opened %d connections, want 1", n)
	}
}

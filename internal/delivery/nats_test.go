package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// startNATS runs a JetStream-enabled nats-server inside the test process
// on a free loopback port, with a stream ORDERS on orders.>, and returns
// its URL and a JetStream client to inspect the stream.
func startNATS(t *testing.T) (string, jetstream.Stream) {
	t.Helper()
	srv, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(waitLimit) {
		t.Fatal("nats-server did not start")
	}
	url := srv.ClientURL()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return url, stream
}

func natsCallback(url, subject string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_NATS, Endpoint: url + "/" + subject}
}

// lastMessage reads the stream's last message on subject.
func lastMessage(t *testing.T, stream jetstream.Stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	m, err := stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("reading %s: %v", subject, err)
	}
	return m
}

func streamMessages(t *testing.T, stream jetstream.Stream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestNATSPublishesToTheGroupSubject(t *testing.T) {
	url, stream := startNATS(t)
	e, _ := newEngine(t, natsCallback(url, "orders.{group}"), nil)
	tk := task("order 17")
	tk.Group = "eu/17"
	if err := deliver(e, tk, 1).wait(t); err != nil {
		t.Fatalf("delivery: %v", err)
	}
	m := lastMessage(t, stream, "orders.eu/17")
	if string(m.Data) != "order 17" {
		t.Fatalf("payload %q", m.Data)
	}
	want := map[string]string{
		"Nats-Msg-Id":            fmt.Sprintf("%d-%d", tk.Id, tk.DueMs),
		webhook.HeaderTaskID:     strconv.FormatUint(tk.Id, 10),
		webhook.HeaderAttempt:    "1",
		webhook.HeaderFireAt:     strconv.FormatInt(tk.DueMs, 10),
		webhook.HeaderClient:     "acme",
		webhook.HeaderGroup:      "eu%2F17",
		webhook.HeaderTerm:       strconv.FormatUint(testTerm, 10),
		webhook.HeaderDeliveryID: m.Header.Get(webhook.HeaderDeliveryID),
	}
	for name, v := range want {
		if got := m.Header.Get(name); got != v || got == "" {
			t.Errorf("header %s = %q, want %q", name, got, v)
		}
	}

	// A second attempt of the same occurrence (its acknowledgement was
	// lost, say) is acknowledged by the stream as a duplicate, and stored
	// once.
	if err := deliver(e, tk, 2).wait(t); err != nil {
		t.Fatalf("repeat: %v", err)
	}
	if n := streamMessages(t, stream); n != 1 {
		t.Fatalf("stream holds %d messages, want 1", n)
	}
	// Ungrouped tasks take the placeholder token.
	if err := deliver(e, task("loose"), 1).wait(t); err != nil {
		t.Fatal(err)
	}
	if m := lastMessage(t, stream, "orders._"); string(m.Data) != "loose" {
		t.Fatalf("ungrouped payload %q", m.Data)
	}
}

func TestNATSFailures(t *testing.T) {
	url, _ := startNATS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()

	cases := []struct {
		name      string
		cb        *storepb.Callback
		group     string
		want      error
		permanent bool
	}{
		{"no stream on the subject", natsCallback(url, "invoices.new"), "", ErrRejected, false},
		{"server down", natsCallback("nats://"+closedPort, "orders.x"), "", ErrUnreachable, false},
		{"group with white space", natsCallback(url, "orders.{group}"), "a b", ErrInvalidCallback, true},
		{"group with a wildcard token", natsCallback(url, "orders.{group}"), "eu.*", ErrInvalidCallback, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newEngine(t, c.cb, func(cfg *Config) { cfg.DefaultTimeout = 5 * time.Second })
			tk := task("x")
			tk.Group = c.group
			err := deliver(e, tk, 1).wait(t)
			if !errors.Is(err, c.want) || IsPermanent(err) != c.permanent {
				t.Fatalf("err = %v (permanent %v), want %v (permanent %v)", err, IsPermanent(err), c.want, c.permanent)
			}
		})
	}
}

// TestNATSConnectionIsShared checks that concurrent attempts share one
// dial and one connection, and that the connection is closed when idle.
func TestNATSConnectionIsShared(t *testing.T) {
	url, stream := startNATS(t)
	e, _ := newEngine(t, natsCallback(url, "orders.{group}"), nil)
	outs := make([]outcome, 50)
	for i := range outs {
		tk := task(strconv.Itoa(i))
		tk.Group = "g" + strconv.Itoa(i%5)
		outs[i] = deliver(e, tk, 1)
	}
	for _, o := range outs {
		if err := o.wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMessages(t, stream); n != 50 {
		t.Fatalf("stream holds %d messages, want 50", n)
	}
	nt := e.transport(storepb.Protocol_PROTOCOL_NATS).(*natsTransport)
	nt.conns.mu.Lock()
	n := len(nt.conns.conns)
	nt.conns.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	// An attempt ends before its publish releases the connection, which
	// the sweep leaves alone until then.
	eventually(t, "the idle sweep to close the connection", func() bool {
		nt.sweep(time.Now().Add(time.Hour))
		nt.conns.mu.Lock()
		defer nt.conns.mu.Unlock()
		return len(nt.conns.conns) == 0
	})
}

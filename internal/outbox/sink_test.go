package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// TestNATSSink sends rows to NATS JetStream, one subject per group: the
// stream's acknowledgement is what makes a row DONE.
func TestNATSSink(t *testing.T) {
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	if !srv.ReadyForConnections(waitLimit) {
		t.Fatal("nats-server did not start")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
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

	cfg := Config{
		Name:         "orders",
		Target:       Target{Client: "admin", Callback: &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_NATS, Endpoint: srv.ClientURL() + "/orders.{group}"}},
		PollInterval: 50 * time.Millisecond,
	}
	db := newDB(t, &cfg)
	const groups, perGroup = 3, 10
	for i := range perGroup {
		for g := range groups {
			insert(t, db, fmt.Sprint("eu", g), fmt.Sprintf("%03d", i))
		}
	}
	startNode(t, cfg, nodeOptions{})
	waitStatus(t, db, map[string]int{"DONE": groups * perGroup})

	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for range groups * perGroup {
		m, err := cons.Next(jetstream.FetchMaxWait(waitLimit))
		if err != nil {
			t.Fatal(err)
		}
		got[m.Subject()] = append(got[m.Subject()], string(m.Data()))
		if m.Headers().Get("Boomerang-Group") == "" || m.Headers().Get("Nats-Msg-Id") == "" {
			t.Fatalf("headers %v", m.Headers())
		}
	}
	for g := range groups {
		if s := fmt.Sprintf("orders.eu%d", g); join(got[s]) != join(payloads("", perGroup)) {
			t.Errorf("%s: %v", s, got[s])
		}
	}
}

package delivery

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A callback to a denied destination fails for good without reaching
// it, whether the endpoint names the address or a name that resolves to
// it, over every protocol.
func TestEgressPolicyRefusesDeniedDestinations(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	_, httpPort, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, tcpPort, _ := net.SplitHostPort(ln.Addr().String())
	t.Setenv(sqsQueueEnv, "")
	newSQSTarget(t) // AWS credentials for the SQS sink, which signs before it dials
	policy, err := egress.New(nil, []string{"127.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cb := range []*storepb.Callback{
		httpCallback("http://127.0.0.1:" + httpPort + "/hook"),
		httpCallback("http://localhost:" + httpPort + "/hook"), // denied only once resolved
		{Protocol: storepb.Protocol_PROTOCOL_GRPC, Endpoint: "localhost:" + httpPort},
		{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: "localhost:" + tcpPort},
		{Protocol: storepb.Protocol_PROTOCOL_UDP, Endpoint: "localhost:" + tcpPort},
		{Protocol: storepb.Protocol_PROTOCOL_NATS, Endpoint: "nats://127.0.0.1:" + tcpPort + "/orders"},
		{Protocol: storepb.Protocol_PROTOCOL_NATS, Endpoint: "nats://localhost:" + tcpPort + "/orders"},
		{Protocol: storepb.Protocol_PROTOCOL_AMQP, Endpoint: "amqp://localhost:" + tcpPort + "/?routing_key=orders"},
		{Protocol: storepb.Protocol_PROTOCOL_ACTIVEMQ, Endpoint: "activemq://127.0.0.1:" + tcpPort + "/queue/orders"},
		{Protocol: storepb.Protocol_PROTOCOL_ACTIVEMQ, Endpoint: "activemq://localhost:" + tcpPort + "/queue/orders"},
		{Protocol: storepb.Protocol_PROTOCOL_SQS, Endpoint: "sqs://127.0.0.1:" + tcpPort + "/1/orders.fifo?tls=false&region=us-east-1"},
		{Protocol: storepb.Protocol_PROTOCOL_SQS, Endpoint: "sqs://localhost:" + tcpPort + "/1/orders.fifo?tls=false&region=us-east-1"},
	} {
		e, _ := newEngine(t, cb, func(c *Config) { c.Egress = policy })
		err := deliver(e, task("x"), 1).wait(t)
		if !errors.Is(err, egress.ErrDenied) || !IsPermanent(err) {
			t.Errorf("%s %s: outcome %v, want a permanent ErrDenied", cb.Protocol, cb.Endpoint, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("denied destinations were reached %d times", n)
	}
}

// A client's own rules narrow the server's policy for its endpoints.
func TestEgressClientRules(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	rules, err := egress.New([]string{"192.0.2.0/24"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clients := &detailedClients{clientMap: newClientMap(&storepb.Client{Id: "acme", Callback: httpCallback(srv.URL)}),
		details: Details{Secrets: []Secret{{Key: testSecret}}, Rules: rules}}
	e := newEngineWith(t, Config{Clients: clients})
	if err := deliver(e, task("x"), 1).wait(t); !errors.Is(err, egress.ErrDenied) {
		t.Fatalf("outside the client's allow list: %v, want ErrDenied", err)
	}
}

// While a secret rotation overlaps, webhooks carry a signature with each
// secret; once the old one expires, only the new one signs.
func TestRotatedSecretsSignUntilTheyExpire(t *testing.T) {
	sigs := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sigs <- r.Header.Clone()
	}))
	defer srv.Close()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	oldUntil := clock.Now().Add(time.Hour)
	clients := &detailedClients{clientMap: newClientMap(&storepb.Client{Id: "acme", Callback: httpCallback(srv.URL), SigningSecret: []byte("sealed, not a key")}),
		details: Details{Secrets: []Secret{{Key: []byte("new-secret")}, {Key: []byte("old-secret"), Until: oldUntil}}}}
	e := newEngineWith(t, Config{Clients: clients, Clock: clock})

	check := func(want ...string) {
		t.Helper()
		if err := deliver(e, task("x"), 1).wait(t); err != nil {
			t.Fatal(err)
		}
		h := <-sigs
		if got := strings.Count(h.Get(webhook.HeaderSignature), webhook.SchemeV1); got != len(want) {
			t.Fatalf("signature %q: want %d entries", h.Get(webhook.HeaderSignature), len(want))
		}
		ts := time.Unix(mustParseInt(t, h.Get(webhook.HeaderTimestamp)), 0)
		for _, secret := range want {
			if _, err := webhook.Verify([]byte(secret), h, []byte("x"), ts, 0); err != nil {
				t.Errorf("verify with %s: %v", secret, err)
			}
		}
	}
	check("new-secret", "old-secret")
	clock.Advance(time.Hour)
	check("new-secret")
}

type detailedClients struct {
	*clientMap
	details Details
}

func (d *detailedClients) ClientDetails(string) (Details, error) { return d.details, nil }

func newEngineWith(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(t.Context()) })
	return e
}

func mustParseInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// hostileTexts are what a careless or hostile receiver answers with: a
// multi-byte character cut at the old 256-byte limit, bytes that are not
// UTF-8, terminal escapes and control characters, and a megabyte.
var hostileTexts = map[string]string{
	"cut":     strings.Repeat("€", 85) + "\xe2\x82", // 255 + 2 bytes: cut inside a character at 256
	"invalid": "bad \xff\xfe\xfd bytes",
	"control": "\x1b]0;owned\x07\x1b[2J\x00\r\nsecond line\u202e",
	"huge":    strings.Repeat("é", 1<<19) + "\xff",
}

// Receivers of every protocol answer every delivery with hostile error
// text while another client keeps registering and receiving. Every
// hostile task ends in the dead letter queue with its error made safe,
// the other client is served throughout, the server stays ready, and it
// starts again cleanly on the same data.
func TestHostileReceiversCannotStopTheServer(t *testing.T) {
	dir := newDataDir(t)
	s := startServer(t, dir)
	admin := s.admin(t)
	ctx := testContext(t)

	endpoints := map[boomerangv1.Protocol]string{
		boomerangv1.Protocol_PROTOCOL_GRPC: startHostileGRPC(t),
		boomerangv1.Protocol_PROTOCOL_TCP:  startHostileTCP(t),
		boomerangv1.Protocol_PROTOCOL_HTTP: startHostileHTTP(t),
	}
	var hostile []*client.Client
	for proto, endpoint := range endpoints {
		id := "hostile-" + strings.ToLower(strings.TrimPrefix(proto.String(), "PROTOCOL_"))
		_, err := admin.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{
			ClientId: id, Password: id + "-password",
			Callback: &boomerangv1.Callback{Protocol: proto, Endpoint: endpoint, TimeoutMs: 10_000},
			Retry:    &boomerangv1.RetryPolicy{MaxAttempts: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		hostile = append(hostile, s.dial(t, id, id+"-password"))
	}
	good := startReceiver(t, false)
	registerClient(t, admin, "steady", good.url(), boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR)
	steady := s.dial(t, "steady", "steady-password")

	stop := make(chan struct{})
	var sent atomic.Int64
	var load sync.WaitGroup
	load.Go(func() { keepRegistering(t, steady, stop, &sent) })

	for _, c := range hostile {
		for kind := range hostileTexts {
			for _, group := range []string{"", "g"} {
				if _, err := c.RegisterTask(ctx, &boomerangv1.RegisterTaskRequest{Payload: []byte(kind), Group: group}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	want := len(hostileTexts) * 2
	for _, c := range hostile {
		waitFor(t, "every hostile task in the dead letter queue", func() bool {
			resp, err := c.ListDeadLetters(ctx, &boomerangv1.ListDeadLettersRequest{})
			return err == nil && len(resp.DeadLetters) == want
		})
		checkSafeErrors(t, c)
	}
	close(stop)
	load.Wait()
	waitFor(t, "every steady task delivered", func() bool { return int64(len(good.got)) >= sent.Load() })
	if code := httpStatus(t, "http://"+s.http+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after hostile receivers: %d", code)
	}

	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	s = startServer(t, dir)
	if code := httpStatus(t, "http://"+s.http+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after a restart: %d", code)
	}
	steady = s.dial(t, "steady", "steady-password")
	drain(good)
	deliverNow(t, steady, good)
}

// keepRegistering registers tasks due now until stop closes.
func keepRegistering(t *testing.T, c *client.Client, stop <-chan struct{}, sent *atomic.Int64) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		_, err := c.RegisterTask(context.Background(), &boomerangv1.RegisterTaskRequest{Payload: []byte(fmt.Sprint("steady ", i)), Group: fmt.Sprint("s", i%4)})
		if err != nil {
			t.Errorf("a steady registration failed: %v", err)
			return
		}
		sent.Add(1)
	}
}

// checkSafeErrors checks what the dead letters say of their receivers.
func checkSafeErrors(t *testing.T, c *client.Client) {
	t.Helper()
	resp, err := c.ListDeadLetters(testContext(t), &boomerangv1.ListDeadLettersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.DeadLetters {
		e := d.GetLastError()
		if !utf8.ValidString(e) || len(e) > 1024 || strings.ContainsAny(e, "\x1b\x00\x07\r\n\u202e") || e == "" {
			t.Errorf("dead letter %d of %q keeps the receiver's text unsafe: %q", d.Id, d.Task.GetPayload(), e)
		}
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// hostileError answers a delivery with the text its payload names.
func hostileError(_ context.Context, d *boomerangv1.Delivery) error {
	return errors.New(hostileTexts[string(d.Payload)])
}

// startHostileGRPC serves the SDK's gRPC receiver (cleartext HTTP/2).
func startHostileGRPC(t *testing.T) string {
	mux := http.NewServeMux()
	mux.Handle(client.NewGRPCReceiver(hostileError).Handler())
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	return serveHTTP(t, &http.Server{Handler: mux, Protocols: &protocols})
}

// startHostileHTTP answers 500 with a hostile body: the SDK's webhook
// receiver keeps only a first line, a careless one sends anything.
func startHostileHTTP(t *testing.T) string {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64)
		n, _ := r.Body.Read(buf)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(hostileTexts[strings.TrimSpace(string(buf[:n]))]))
	})}
	return "http://" + serveHTTP(t, srv) + "/hook"
}

func serveHTTP(t *testing.T, srv *http.Server) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// startHostileTCP serves the SDK's raw TCP receiver.
func startHostileTCP(t *testing.T) string {
	r, err := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: hostileError})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = r.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = r.Close(context.Background())
		<-served
	})
	return ln.Addr().String()
}

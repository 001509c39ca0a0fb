package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// TestRealDeliveryEngine runs the server with its own delivery engine
// against a webhook receiver on loopback: a task is delivered signed with
// the client's secret, and a receiver that refuses sends its task to the
// dead letter queue.
func TestRealDeliveryEngine(t *testing.T) {
	t.Parallel()
	type hit struct {
		body []byte
		err  error
	}
	hits := make(chan hit, 16)
	var secret []byte
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, err := webhook.Verify(secret, r.Header, body, time.Now(), webhook.DefaultTolerance)
		hits <- hit{body, err}
	}))
	defer ok.Close()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refuse.Close()

	ts := startServer(t, func(c *Config) { c.Deliverer, c.Clock = nil, clockwork.NewRealClock() })
	resp, err := ts.svc.RegisterClient(ctx, admin, &boomerangv1.RegisterClientRequest{
		ClientId: "alice", Password: "alice-password",
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: ok.URL + "/hook"},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret = resp.SigningSecret
	ts.addClient(t, &boomerangv1.RegisterClientRequest{
		ClientId: "bob", Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: refuse.URL},
		Retry: &boomerangv1.RetryPolicy{MaxAttempts: 1},
	})

	ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Payload: []byte("ping")})
	select {
	case h := <-hits:
		if string(h.body) != "ping" || h.err != nil {
			t.Fatalf("webhook got %q, signature check: %v", h.body, h.err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the task was never delivered")
	}

	task := ts.register(t, bob, &boomerangv1.RegisterTaskRequest{Payload: []byte("refused")})
	poll(t, "a dead letter for the refused task", func() bool {
		dls, err := ts.svc.ListDeadLetters(ctx, bob, &boomerangv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return len(dls.DeadLetters) == 1 && dls.DeadLetters[0].Task.Id == task.Id
	})
}

package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// delivery is one webhook call the receiver saw.
type delivery struct {
	taskID  string
	attempt string
	payload string
}

// receiver is a webhook endpoint on loopback that answers 200 or 500 as
// told and reports every call.
type receiver struct {
	srv  *httptest.Server
	fail atomic.Bool
	got  chan delivery
}

func startReceiver(t *testing.T, failing bool) *receiver {
	t.Helper()
	r := &receiver{got: make(chan delivery, 1024)}
	r.fail.Store(failing)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		select {
		case r.got <- delivery{req.Header.Get("Boomerang-Task-Id"), req.Header.Get("Boomerang-Attempt"), string(body)}:
		default:
		}
		if r.fail.Load() {
			http.Error(w, "receiver told to fail", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/hook" }

// next returns the next delivery, failing the test after waitLimit.
func (r *receiver) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-r.got:
		return d
	case <-time.After(waitLimit):
		t.Fatal("no delivery arrived in time")
		return delivery{}
	}
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

var receiverSecret = []byte("s3cret")

// signedRequest builds a delivery as the server sends it, signed with
// secret at ts.
func signedRequest(t *testing.T, url string, secret []byte, ts time.Time, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var signers []*webhook.Signer
	if secret != nil {
		signers = append(signers, webhook.NewSigner(secret))
	}
	webhook.SetHeaders(req.Header, &webhook.Meta{
		DeliveryID: 9, TaskID: 42, Attempt: 2, FireAtMs: 1_767_225_600_000,
		Client: "billing", Group: "customer 7", Timestamp: ts.Unix(),
	}, []byte(body), signers...)
	return req
}

func TestHTTPReceiver(t *testing.T) {
	now := time.Unix(1_767_225_660, 0)
	clock := clockwork.NewFakeClockAt(now)
	got := make(chan *boomerangv1.Delivery, 1)
	r, err := NewHTTPReceiver(HTTPReceiverConfig{Secret: receiverSecret, Clock: clock, MaxBody: 64,
		Handler: func(_ context.Context, d *boomerangv1.Delivery) error {
			got <- d
			if string(d.Payload) == "fail" {
				return errors.New("cannot now\nsecond line")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()

	tamperedBody := signedRequest(t, srv.URL, receiverSecret, now, "original")
	tamperedBody.Body = io.NopCloser(strings.NewReader("tampered"))
	tamperedBody.ContentLength = int64(len("tampered"))
	relabelled := signedRequest(t, srv.URL, receiverSecret, now, "x")
	relabelled.Header.Set(HeaderFireAt, "1767225601000") // another occurrence, to slip past deduplication
	noSig := signedRequest(t, srv.URL, receiverSecret, now, "x")
	noSig.Header.Del(HeaderSignature)
	badHeader := signedRequest(t, srv.URL, receiverSecret, now, "x")
	badHeader.Header.Set(HeaderTaskID, "forty-two")
	rotated := signedRequest(t, srv.URL, receiverSecret, now, "x")
	rotated.Header.Set(HeaderSignature, "v1=00ff, "+rotated.Header.Get(HeaderSignature)) // several entries: any may match
	get, _ := http.NewRequest(http.MethodGet, srv.URL, nil)

	for _, tc := range []struct {
		name    string
		req     *http.Request
		code    int
		handled bool
		text    string
	}{
		{"valid", signedRequest(t, srv.URL, receiverSecret, now, "hello"), 204, true, ""},
		{"several signatures", rotated, 204, true, ""},
		{"handler error", signedRequest(t, srv.URL, receiverSecret, now, "fail"), 500, true, "cannot now"},
		{"wrong secret", signedRequest(t, srv.URL, []byte("other"), now, "x"), 401, false, "does not match"},
		{"tampered body", tamperedBody, 401, false, "does not match"},
		{"relabelled fire time", relabelled, 401, false, "does not match"},
		{"no signature", noSig, 401, false, "no signature"},
		{"unsigned server", signedRequest(t, srv.URL, nil, now, "x"), 401, false, "no signature"},
		{"stale", signedRequest(t, srv.URL, receiverSecret, now.Add(-6*time.Minute), "x"), 401, false, "tolerance"},
		{"from the future", signedRequest(t, srv.URL, receiverSecret, now.Add(6*time.Minute), "x"), 401, false, "tolerance"},
		{"within tolerance", signedRequest(t, srv.URL, receiverSecret, now.Add(-4*time.Minute), "x"), 204, true, ""},
		{"bad header", badHeader, 400, false, "Boomerang-Task-Id"},
		{"too large", signedRequest(t, srv.URL, receiverSecret, now, strings.Repeat("x", 65)), 413, false, "larger than 64"},
		{"not POST", get, 405, false, "POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.text) {
				t.Fatalf("status %d %q, want %d mentioning %q", resp.StatusCode, body, tc.code, tc.text)
			}
			if tc.code == 500 && bytes.Contains(body, []byte("second line")) {
				t.Fatalf("the error body has more than its first line: %q", body)
			}
			select {
			case d := <-got:
				if !tc.handled {
					t.Fatalf("the handler ran: %v", d)
				}
				if d.TaskId != 42 || d.Attempt != 2 || d.DeliveryId != 9 || d.Client != "billing" ||
					d.Group != "customer 7" || d.FireAtMs != 1_767_225_600_000 || d.SentMs%1000 != 0 {
					t.Fatalf("handler got %v", d)
				}
			default:
				if tc.handled {
					t.Fatal("the handler did not run")
				}
			}
		})
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestHTTPReceiverConfig(t *testing.T) {
	h := func(context.Context, *boomerangv1.Delivery) error { return nil }
	for _, cfg := range []HTTPReceiverConfig{
		{Handler: h},
		{Secret: receiverSecret},
		{Secret: receiverSecret, Handler: h, Tolerance: -1},
	} {
		if _, err := NewHTTPReceiver(cfg); err == nil {
			t.Errorf("NewHTTPReceiver accepted %+v", cfg)
		}
	}
}

// docExampleSignature is the signature in docs/callbacks.md's worked
// example, computed there with openssl.
const docExampleSignature = "f78dbff6b518a853e5e34a9b318642625c0019588b17e6cc5c933055b0d033a8"

func TestVerifyWebhookRecipe(t *testing.T) {
	// The worked example of docs/callbacks.md.
	h := http.Header{}
	h.Set(HeaderDeliveryID, "7")
	h.Set(HeaderTaskID, "281474976710657")
	h.Set(HeaderAttempt, "1")
	h.Set(HeaderFireAt, "1767225600000")
	h.Set(HeaderClient, "billing")
	h.Set(HeaderGroup, "customer%207")
	h.Set(HeaderTimestamp, "1767225600")
	h.Set(HeaderSignature, "v1="+docExampleSignature)
	d, err := VerifyWebhook([]byte("whsec_example"), h, []byte(`{"invoice":42}`), time.Unix(1767225600, 0), 0)
	if err != nil {
		t.Fatalf("the documented example does not verify: %v", err)
	}
	if d.Group != "customer 7" || d.TaskId != 281474976710657 {
		t.Fatalf("decoded %v", d)
	}
}

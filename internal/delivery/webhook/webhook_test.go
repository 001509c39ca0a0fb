package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSignAndVerify(t *testing.T) {
	secret := []byte("k")
	body := []byte("payload")
	m := Meta{DeliveryID: 1, TaskID: 2, Attempt: 3, FireAtMs: 4, Client: "c/1", Group: "g h", Timestamp: 1000}
	h := http.Header{}
	SetHeaders(h, &m, body, NewSigner(secret))
	got, err := Verify(secret, h, body, time.Unix(1000, 0), 0)
	if err != nil || got != m {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, m)
	}
	for _, tc := range []struct {
		name   string
		change func(h http.Header) []byte
		want   error
	}{
		{"body", func(http.Header) []byte { return []byte("other") }, ErrBadSignature},
		{"task", func(h http.Header) []byte { h.Set(HeaderTaskID, "3"); return body }, ErrBadSignature},
		{"attempt", func(h http.Header) []byte { h.Set(HeaderAttempt, "4"); return body }, ErrBadSignature},
		{"group", func(h http.Header) []byte { h.Set(HeaderGroup, "g"); return body }, ErrBadSignature},
		{"client", func(h http.Header) []byte { h.Set(HeaderClient, "c"); return body }, ErrBadSignature},
		{"timestamp", func(h http.Header) []byte { h.Set(HeaderTimestamp, "1001"); return body }, ErrBadSignature},
		{"no signature", func(h http.Header) []byte { h.Del(HeaderSignature); return body }, ErrNoSignature},
		{"other scheme", func(h http.Header) []byte { h.Set(HeaderSignature, "v0=abcd"); return body }, ErrNoSignature},
		{"bad hex", func(h http.Header) []byte { h.Set(HeaderSignature, "v1=zz"); return body }, ErrBadSignature},
		{"upper case", func(h http.Header) []byte {
			h.Set(HeaderSignature, strings.ToUpper(h.Get(HeaderSignature))) // V1=: another scheme
			return body
		}, ErrNoSignature},
		{"bad number", func(h http.Header) []byte { h.Set(HeaderAttempt, "x"); return body }, ErrBadHeader},
		{"bad escape", func(h http.Header) []byte { h.Set(HeaderGroup, "%g0"); return body }, ErrBadHeader},
	} {
		h2 := h.Clone()
		b := tc.change(h2)
		if _, err := Verify(secret, h2, b, time.Unix(1000, 0), 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := Verify(secret, h, body, time.Unix(1000+301, 0), 0); !errors.Is(err, ErrStale) {
		t.Errorf("5 min 1 s later: %v, want stale", err)
	}
	if _, err := Verify(secret, h, body, time.Unix(1000+301, 0), time.Hour); err != nil {
		t.Errorf("within a wider tolerance: %v", err)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"order-7_a.b~c":   "order-7_a.b~c",
		"a b/c%d\n\x00é+": "a%20b%2Fc%25d%0A%00%C3%A9%2B",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if back, err := Unescape(want); err != nil || back != in {
			t.Errorf("Unescape(%q) = %q, %v", want, back, err)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz", "a%G1"} {
		if _, err := Unescape(bad); err == nil {
			t.Errorf("Unescape(%q) accepted", bad)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("1000", "2", "3", "4", "c", "g%20h", "v1=00", []byte("body"))
	f.Add("", "", "", "", "", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, ts, task, attempt, fireAt, client, group, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderDeliveryID, "1")
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderTaskID, task)
		h.Set(HeaderAttempt, attempt)
		h.Set(HeaderFireAt, fireAt)
		h.Set(HeaderClient, client)
		h.Set(HeaderGroup, group)
		h.Set(HeaderSignature, sig)
		if _, err := Verify([]byte("k"), h, body, time.Unix(1000, 0), 0); err != nil {
			return
		}
		// Only a correct signature verifies. (Header values are what
		// http.Header keeps, which may differ from the raw strings.)
		want := Sign([]byte("k"), h.Get(HeaderTimestamp), h.Get(HeaderTaskID), h.Get(HeaderAttempt),
			h.Get(HeaderFireAt), h.Get(HeaderClient), h.Get(HeaderGroup), body)
		for entry := range strings.SplitSeq(h.Get(HeaderSignature), ",") {
			if strings.EqualFold(strings.TrimSpace(entry), SchemeV1+want) {
				return
			}
		}
		t.Fatalf("verified with signature %q, want an entry v1=%s", sig, want)
	})
}

func FuzzUnescape(f *testing.F) {
	f.Add("a%20b")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Unescape(s)
		if err != nil {
			return
		}
		if again, err := Unescape(Escape(u)); err != nil || again != u {
			t.Fatalf("round trip of %q: %q, %v", u, again, err)
		}
	})
}

// During a rotation a delivery carries a signature per secret; a receiver
// holding either one accepts it.
func TestSetHeadersSeveralSecrets(t *testing.T) {
	body := []byte("payload")
	m := Meta{DeliveryID: 1, TaskID: 2, Attempt: 1, FireAtMs: 4, Client: "c", Timestamp: 1000}
	h := http.Header{}
	SetHeaders(h, &m, body, NewSigner([]byte("new-secret")), NewSigner([]byte("old-secret")))
	if got := strings.Count(h.Get(HeaderSignature), SchemeV1); got != 2 {
		t.Fatalf("signature header %q: want two entries", h.Get(HeaderSignature))
	}
	for _, secret := range []string{"new-secret", "old-secret"} {
		if _, err := Verify([]byte(secret), h, body, time.Unix(1000, 0), 0); err != nil {
			t.Errorf("verify with %s: %v", secret, err)
		}
	}
	if _, err := Verify([]byte("other"), h, body, time.Unix(1000, 0), 0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("verify with another secret: %v", err)
	}
}

package conformance

import (
	"encoding/hex"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// signature is one signed delivery: every input, the string that is
// signed, and the headers Boomerang sends.
type signature struct {
	Name       string            `json:"name"`
	SecretHex  string            `json:"secret_hex"`
	DeliveryID string            `json:"delivery_id"`
	TaskID     string            `json:"task_id"`
	Attempt    uint32            `json:"attempt"`
	FireAtMs   string            `json:"fire_at_ms"`
	Client     string            `json:"client"`
	Group      string            `json:"group"`
	Timestamp  int64             `json:"timestamp"`
	BodyHex    string            `json:"body_hex"`
	SignedHex  string            `json:"signed_hex"`
	Headers    map[string]string `json:"headers"`
}

// verification is a received delivery and what a receiver must decide:
// "ok", "no_signature", "bad_signature", "stale" or "bad_header".
type verification struct {
	Name             string            `json:"name"`
	SecretHex        string            `json:"secret_hex"`
	Headers          map[string]string `json:"headers"`
	BodyHex          string            `json:"body_hex"`
	Now              int64             `json:"now"`
	ToleranceSeconds int64             `json:"tolerance_seconds"`
	Result           string            `json:"result"`
	Delivery         *deliveryMeta     `json:"delivery,omitempty"`
}

// deliveryMeta is what the headers of an accepted delivery say.
type deliveryMeta struct {
	DeliveryID string `json:"delivery_id"`
	TaskID     string `json:"task_id"`
	Attempt    uint32 `json:"attempt"`
	FireAtMs   string `json:"fire_at_ms"`
	Client     string `json:"client"`
	Group      string `json:"group"`
	Timestamp  int64  `json:"timestamp"`
}

type escape struct {
	Raw     string `json:"raw"`
	Escaped string `json:"escaped"`
}

type webhooks struct {
	Format          int            `json:"format"`
	Comment         string         `json:"comment"`
	Signatures      []signature    `json:"signatures"`
	Verifications   []verification `json:"verifications"`
	Escapes         []escape       `json:"escapes"`
	UnescapeInvalid []string       `json:"unescape_invalid"`
}

type signInput struct {
	name   string
	secret []byte
	meta   webhook.Meta
	body   []byte
}

func signInputs() []signInput {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	return []signInput{
		// The worked example of docs/callbacks.md.
		{"docs_example", []byte("whsec_example"), webhook.Meta{DeliveryID: 7, TaskID: taskID, Attempt: 1, FireAtMs: dueMs, Client: "billing", Group: "customer 7", Timestamp: 1767225600}, []byte(`{"invoice":42}`)},
		{"ungrouped_empty_body", []byte("0123456789abcdef"), webhook.Meta{DeliveryID: 1, TaskID: 2, Attempt: 1, FireAtMs: 1000, Client: "quick", Timestamp: 1}, nil},
		{"escaped_names", []byte("quickstart-secret"), webhook.Meta{DeliveryID: 99, TaskID: bigID, Attempt: 2, FireAtMs: dueMs, Client: "acme.corp_eu-1~x", Group: "Zürich/ä 100% ✓+,\"", Timestamp: 1767225601}, []byte("plain text\n")},
		{"max_values_binary", secretBytes(), webhook.Meta{DeliveryID: maxID, TaskID: maxID, Attempt: math.MaxUint32, FireAtMs: math.MaxInt64, Client: "c", Group: "g", Timestamp: 4102444800}, binary},
	}
}

// headerMap flattens h (one value per name) for the file.
func headerMap(h http.Header) map[string]string {
	m := map[string]string{}
	for k, v := range h {
		m[k] = v[0]
	}
	return m
}

func newSignature(in signInput) signature {
	h := http.Header{}
	webhook.SetHeaders(h, &in.meta, in.body, webhook.NewSigner(in.secret))
	signed := strings.Join([]string{h.Get(webhook.HeaderTimestamp), h.Get(webhook.HeaderTaskID), h.Get(webhook.HeaderAttempt),
		h.Get(webhook.HeaderFireAt), h.Get(webhook.HeaderClient), h.Get(webhook.HeaderGroup), ""}, "\n")
	return signature{
		Name: in.name, SecretHex: hex.EncodeToString(in.secret),
		DeliveryID: strconv.FormatUint(in.meta.DeliveryID, 10), TaskID: strconv.FormatUint(in.meta.TaskID, 10),
		Attempt: in.meta.Attempt, FireAtMs: strconv.FormatInt(in.meta.FireAtMs, 10), Client: in.meta.Client, Group: in.meta.Group,
		Timestamp: in.meta.Timestamp, BodyHex: hex.EncodeToString(in.body),
		SignedHex: hex.EncodeToString(append([]byte(signed), in.body...)), Headers: headerMap(h),
	}
}

// verifyCase changes a signed delivery before it is checked.
type verifyCase struct {
	name      string
	from      int // index into signInputs
	secret    []byte
	body      []byte
	change    func(h http.Header)
	skew      int64 // now - timestamp, in seconds
	tolerance int64
}

func verifyCases() []verifyCase {
	set := func(name, value string) func(http.Header) {
		return func(h http.Header) { h.Set(name, value) }
	}
	sig := func(f func(good string) string) func(http.Header) {
		return func(h http.Header) { h.Set(webhook.HeaderSignature, f(h.Get(webhook.HeaderSignature))) }
	}
	return []verifyCase{
		{name: "ok", from: 0},
		{name: "ok_escaped_names", from: 2},
		{name: "ok_binary_body", from: 3},
		{name: "ok_group_header_absent", from: 1, change: func(h http.Header) { h.Del(webhook.HeaderGroup) }},
		{name: "ok_upper_case_hex", from: 0, change: sig(func(g string) string { return "v1=" + strings.ToUpper(g[3:]) })},
		{name: "ok_among_other_entries", from: 0, change: sig(func(g string) string { return "v0=abc, v1=" + strings.Repeat("0", 64) + " ," + g + ",v2=zz" })},
		{name: "ok_at_tolerance_past", from: 0, skew: 300, tolerance: 300},
		{name: "ok_at_tolerance_future", from: 0, skew: -300, tolerance: 300},
		{name: "ok_wider_tolerance", from: 0, skew: 3600, tolerance: 3600},
		{name: "stale_past", from: 0, skew: 301, tolerance: 300},
		{name: "stale_future", from: 0, skew: -301, tolerance: 300},
		{name: "bad_signature_wrong_secret", from: 0, secret: []byte("whsec_other")},
		{name: "bad_signature_body_changed", from: 0, body: []byte(`{"invoice":43}`)},
		{name: "bad_signature_group_relabelled", from: 0, change: set(webhook.HeaderGroup, "customer%208")},
		{name: "bad_signature_task_relabelled", from: 0, change: set(webhook.HeaderTaskID, "281474976710658")},
		{name: "bad_signature_attempt_relabelled", from: 0, change: set(webhook.HeaderAttempt, "2")},
		{name: "bad_signature_decoded_group", from: 0, change: set(webhook.HeaderGroup, "customer 7")},
		{name: "bad_signature_not_hex", from: 0, change: set(webhook.HeaderSignature, "v1="+strings.Repeat("z", 64))},
		{name: "bad_signature_before_stale", from: 0, secret: []byte("whsec_other"), skew: 3600, tolerance: 300},
		{name: "no_signature_header", from: 0, change: func(h http.Header) { h.Del(webhook.HeaderSignature) }},
		{name: "no_signature_other_schemes", from: 0, change: sig(func(g string) string { return "v0=" + g[3:] + ", V1=" + g[3:] })},
		{name: "bad_header_attempt", from: 0, change: set(webhook.HeaderAttempt, "one")},
		{name: "bad_header_task_missing", from: 0, change: func(h http.Header) { h.Del(webhook.HeaderTaskID) }},
		{name: "bad_header_negative_task", from: 0, change: set(webhook.HeaderTaskID, "-1")},
		{name: "bad_header_attempt_over_32_bits", from: 0, change: set(webhook.HeaderAttempt, "4294967296")},
		{name: "bad_header_timestamp", from: 0, change: set(webhook.HeaderTimestamp, "1767225600.5")},
		{name: "bad_header_client_escape", from: 0, change: set(webhook.HeaderClient, "bill%zzing")},
	}
}

// verdict names webhook.Verify's answer as the file does.
func verdict(err error) string {
	for _, v := range []struct {
		err  error
		name string
	}{
		{webhook.ErrNoSignature, "no_signature"},
		{webhook.ErrBadSignature, "bad_signature"},
		{webhook.ErrStale, "stale"},
		{webhook.ErrBadHeader, "bad_header"},
	} {
		if errors.Is(err, v.err) {
			return v.name
		}
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

func newVerification(t *testing.T, c verifyCase) verification {
	in := signInputs()[c.from]
	h := http.Header{}
	webhook.SetHeaders(h, &in.meta, in.body, webhook.NewSigner(in.secret))
	if c.change != nil {
		c.change(h)
	}
	secret, body := in.secret, in.body
	if c.secret != nil {
		secret = c.secret
	}
	if c.body != nil {
		body = c.body
	}
	tolerance := c.tolerance
	if tolerance == 0 {
		tolerance = int64(webhook.DefaultTolerance / time.Second)
	}
	now := in.meta.Timestamp + c.skew
	m, err := webhook.Verify(secret, h, body, time.Unix(now, 0), time.Duration(tolerance)*time.Second)
	v := verification{
		Name: c.name, SecretHex: hex.EncodeToString(secret), Headers: headerMap(h), BodyHex: hex.EncodeToString(body),
		Now: now, ToleranceSeconds: tolerance, Result: verdict(err),
	}
	if err == nil {
		v.Delivery = &deliveryMeta{
			DeliveryID: strconv.FormatUint(m.DeliveryID, 10), TaskID: strconv.FormatUint(m.TaskID, 10), Attempt: m.Attempt,
			FireAtMs: strconv.FormatInt(m.FireAtMs, 10), Client: m.Client, Group: m.Group, Timestamp: m.Timestamp,
		}
	}
	if !strings.HasPrefix(c.name, v.Result) {
		t.Errorf("%s: Verify says %q", c.name, v.Result)
	}
	return v
}

func webhooksFile(t *testing.T) webhooks {
	f := webhooks{
		Format:  formatVersion,
		Comment: "HTTP callback signatures: every input, the signed bytes and the headers sent; received deliveries and the verdict a receiver must reach; the percent-encoding of client and group. See README.md.",
	}
	for _, in := range signInputs() {
		f.Signatures = append(f.Signatures, newSignature(in))
	}
	for _, c := range verifyCases() {
		f.Verifications = append(f.Verifications, newVerification(t, c))
	}
	for _, raw := range []string{"", "order-7_a.b~c", "customer 7", "a b/c%d\n\x00é+", "Zürich/ä 100% ✓+,\"", "~!*'();:@&=+$,/?#[]"} {
		f.Escapes = append(f.Escapes, escape{Raw: raw, Escaped: webhook.Escape(raw)})
	}
	for _, bad := range []string{"%", "%4", "%zz", "a%G1", "100%"} {
		if _, err := webhook.Unescape(bad); err == nil {
			t.Fatalf("Unescape(%q) accepts it", bad)
		}
		f.UnescapeInvalid = append(f.UnescapeInvalid, bad)
	}
	return f
}

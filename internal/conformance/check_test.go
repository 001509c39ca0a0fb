package conformance

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// The checks below read the checked-in files the way another SDK would,
// so a vector whose parts disagree (hex, JSON, frame) fails here even if
// it was written that way.

func load(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func newMessage(t *testing.T, typ string) proto.Message {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(typ))
	if err != nil {
		t.Fatalf("type %s: %v", typ, err)
	}
	return mt.New().Interface()
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkMessage decodes the vector's hex, JSON and frame and requires the
// three to agree, and the message to encode back to the same bytes.
func checkMessage(t *testing.T, v messageVector) {
	bin := unhex(t, v.Hex)
	fromBin, fromJSON, fromFrame := newMessage(t, v.Type), newMessage(t, v.Type), newMessage(t, v.Type)
	if err := proto.Unmarshal(bin, fromBin); err != nil {
		t.Fatalf("%s: hex: %v", v.Name, err)
	}
	if err := protojson.Unmarshal(v.JSON, fromJSON); err != nil {
		t.Fatalf("%s: json: %v", v.Name, err)
	}
	frame := bufio.NewReader(bytes.NewReader(unhex(t, v.FrameHex)))
	if err := protodelim.UnmarshalFrom(frame, fromFrame); err != nil {
		t.Fatalf("%s: frame: %v", v.Name, err)
	}
	if _, err := frame.ReadByte(); err != io.EOF {
		t.Errorf("%s: bytes left after the frame", v.Name)
	}
	if !proto.Equal(fromBin, fromJSON) || !proto.Equal(fromBin, fromFrame) {
		t.Errorf("%s: hex, json and frame hold different messages", v.Name)
	}
	if again, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(fromJSON); !bytes.Equal(again, bin) {
		t.Errorf("%s: the JSON encodes to %x, not the vector's bytes", v.Name, again)
	}
}

func checkEnvelopes(t *testing.T) {
	var f envelopes
	load(t, "envelopes.json", &f)
	for _, v := range append(f.Requests, f.Responses...) {
		checkMessage(t, v)
	}
	// Every operation of the service has a request and a response, named
	// after its oneof field in the envelopes.
	names := map[string]bool{}
	for _, v := range append(f.Requests, f.Responses...) {
		names[v.Type+"/"+v.Name] = true
	}
	methods := boomerangv1.File_api_boomerang_v1_boomerang_proto.Services().ByName("BoomerangService").Methods()
	body := (&boomerangv1.Request{}).ProtoReflect().Descriptor().Oneofs().ByName("body").Fields()
	if methods.Len() != body.Len() {
		t.Fatalf("%d methods, %d request bodies", methods.Len(), body.Len())
	}
	for i := range body.Len() {
		op := string(body.Get(i).Name())
		if !names["boomerang.v1.Request/"+op] || !names["boomerang.v1.Response/"+op] {
			t.Errorf("operation %s has no request or response vector", op)
		}
	}
}

func checkCallbacks(t *testing.T) {
	var f callbacks
	load(t, "callbacks.json", &f)
	for _, v := range append(f.Deliveries, f.Acks...) {
		checkMessage(t, v)
	}
}

func checkFrames(t *testing.T) {
	var f frames
	load(t, "frames.json", &f)
	for _, s := range f.Streams {
		r := bufio.NewReader(bytes.NewReader(unhex(t, s.StreamHex)))
		for i, want := range s.Messages {
			got, expect := newMessage(t, s.Type), newMessage(t, s.Type)
			if err := protodelim.UnmarshalFrom(r, got); err != nil {
				t.Fatalf("%s: frame %d: %v", s.Name, i, err)
			}
			if err := protojson.Unmarshal(want, expect); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, expect) {
				t.Errorf("%s: frame %d is %v, want %v", s.Name, i, got, expect)
			}
		}
		if err := protodelim.UnmarshalFrom(r, newMessage(t, s.Type)); err != io.EOF {
			t.Errorf("%s: after the last message: %v, want EOF", s.Name, err)
		}
	}
	for _, b := range f.Broken {
		r := bufio.NewReader(bytes.NewReader(unhex(t, b.StreamHex)))
		opts := protodelim.UnmarshalOptions{MaxSize: int64(b.MaxBytes)}
		var err error
		for err == nil {
			err = opts.UnmarshalFrom(r, newMessage(t, b.Type))
		}
		var tooLarge *protodelim.SizeTooLargeError
		got := "bad_length"
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			got = "truncated"
		case errors.As(err, &tooLarge):
			got = "too_large"
		case err == io.EOF:
			got = "accepted"
		}
		if got != b.Error {
			t.Errorf("%s: %v (%s), want %s", b.Name, err, got, b.Error)
		}
	}
}

func checkWebhooks(t *testing.T) {
	var f webhooks
	load(t, "webhooks.json", &f)
	for _, s := range f.Signatures {
		secret, body := unhex(t, s.SecretHex), unhex(t, s.BodyHex)
		m := webhook.Meta{Attempt: s.Attempt, Client: s.Client, Group: s.Group, Timestamp: s.Timestamp}
		m.FireAtMs, _ = strconv.ParseInt(s.FireAtMs, 10, 64)
		m.DeliveryID, _ = strconv.ParseUint(s.DeliveryID, 10, 64)
		m.TaskID, _ = strconv.ParseUint(s.TaskID, 10, 64)
		h := http.Header{}
		webhook.SetHeaders(h, &m, body, webhook.NewSigner(secret))
		for k, v := range s.Headers {
			if h.Get(k) != v || len(h) != len(s.Headers) {
				t.Errorf("%s: header %s is %q, want %q (%d headers, want %d)", s.Name, k, h.Get(k), v, len(h), len(s.Headers))
			}
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(unhex(t, s.SignedHex))
		if want := "v1=" + hex.EncodeToString(mac.Sum(nil)); s.Headers[webhook.HeaderSignature] != want {
			t.Errorf("%s: the signature is not the HMAC of signed_hex", s.Name)
		}
	}
	for _, v := range f.Verifications {
		h := http.Header{}
		for k, val := range v.Headers {
			h.Set(k, val)
		}
		m, err := webhook.Verify(unhex(t, v.SecretHex), h, unhex(t, v.BodyHex), time.Unix(v.Now, 0), time.Duration(v.ToleranceSeconds)*time.Second)
		if got := verdict(err); got != v.Result {
			t.Errorf("%s: %s, want %s", v.Name, got, v.Result)
		}
		if err == nil && (v.Delivery == nil || v.Delivery.TaskID != strconv.FormatUint(m.TaskID, 10) || v.Delivery.Group != m.Group || v.Delivery.Client != m.Client) {
			t.Errorf("%s: accepted %+v, want %+v", v.Name, m, v.Delivery)
		}
	}
	for _, e := range f.Escapes {
		if got := webhook.Escape(e.Raw); got != e.Escaped {
			t.Errorf("Escape(%q) = %q, want %q", e.Raw, got, e.Escaped)
		}
		if back, err := webhook.Unescape(e.Escaped); err != nil || back != e.Raw {
			t.Errorf("Unescape(%q) = %q, %v", e.Escaped, back, err)
		}
	}
	for _, bad := range f.UnescapeInvalid {
		if _, err := webhook.Unescape(bad); err == nil {
			t.Errorf("Unescape(%q) accepted", bad)
		}
	}
}

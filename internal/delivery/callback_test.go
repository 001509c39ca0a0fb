package delivery

import (
	"errors"
	"strings"
	"testing"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestValidateCallback(t *testing.T) {
	const (
		h = storepb.Protocol_PROTOCOL_HTTP
		g = storepb.Protocol_PROTOCOL_GRPC
		c = storepb.Protocol_PROTOCOL_TCP
		u = storepb.Protocol_PROTOCOL_UDP
	)
	for _, tc := range []struct {
		cb      *storepb.Callback
		payload int
		field   string // "" = valid
	}{
		{nil, 0, ""},
		{&storepb.Callback{}, 0, ""},
		{&storepb.Callback{Protocol: h, Endpoint: "https://hooks.example.com/boomerang?x=1"}, 0, ""},
		{&storepb.Callback{Protocol: h, Endpoint: "http://127.0.0.1:8080/"}, 0, ""},
		{&storepb.Callback{Protocol: h, Endpoint: "http://[::1]:8080/x", TimeoutMs: 600_000, Pool: "slow"}, 0, ""},
		{&storepb.Callback{Protocol: g, Endpoint: "callbacks.internal:9000"}, 0, ""},
		{&storepb.Callback{Protocol: c, Endpoint: "10.0.0.1:7000"}, 0, ""},
		{&storepb.Callback{Protocol: u, Endpoint: "[::1]:7000"}, MaxUDPPayload, ""},
		{&storepb.Callback{Endpoint: "x:1"}, 0, "callback.protocol"},
		{&storepb.Callback{Protocol: 9, Endpoint: "x:1"}, 0, "callback.protocol"},
		{&storepb.Callback{Protocol: h}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: h, Endpoint: "ftp://x/"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: h, Endpoint: "/relative"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: h, Endpoint: "http://:80/"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: h, Endpoint: "http://x:99999/"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: h, Endpoint: "http://x/%zz"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: h, Endpoint: "http://x/" + strings.Repeat("a", MaxEndpointLen)}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: c, Endpoint: "no-port"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: c, Endpoint: ":7000"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: c, Endpoint: "x:0"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: c, Endpoint: "x:http"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: g, Endpoint: "http://x:1"}, 0, "callback.endpoint"},
		{&storepb.Callback{Protocol: c, Endpoint: "x:1", TimeoutMs: -1}, 0, "callback.timeout_ms"},
		{&storepb.Callback{Protocol: c, Endpoint: "x:1", TimeoutMs: 600_001}, 0, "callback.timeout_ms"},
		{&storepb.Callback{Protocol: c, Endpoint: "x:1", Pool: strings.Repeat("p", MaxPoolNameLen+1)}, 0, "callback.pool"},
		{&storepb.Callback{Protocol: u, Endpoint: "x:1"}, MaxUDPPayload + 1, "payload"},
		{&storepb.Callback{Protocol: c, Endpoint: "x:1"}, MaxUDPPayload + 1, ""},
	} {
		err := ValidateCallback(tc.cb, tc.payload)
		if tc.field == "" {
			if err != nil {
				t.Errorf("ValidateCallback(%v, %d): %v", tc.cb, tc.payload, err)
			}
			continue
		}
		fe, ok := errors.AsType[*scheduler.FieldError](err)
		if !ok || fe.Field != tc.field || !errors.Is(err, scheduler.ErrInvalid) {
			t.Errorf("ValidateCallback(%v, %d) = %v, want a %s field error", tc.cb, tc.payload, err, tc.field)
		}
	}
}

func TestEffectiveCallback(t *testing.T) {
	client := &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_HTTP, Endpoint: "http://a/", TimeoutMs: 500, Pool: "p"}
	got := Effective(&storepb.Callback{Endpoint: "http://b/", Pool: "q"}, client)
	if got.Protocol != client.Protocol || got.Endpoint != "http://b/" || got.TimeoutMs != 500 || got.Pool != "q" {
		t.Fatalf("Effective = %v", got)
	}
	if Effective(nil, client) != client || Effective(nil, nil) != nil {
		t.Fatal("Effective without an override")
	}
	task := &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_UDP, Endpoint: "x:1"}
	if Effective(task, nil) != task {
		t.Fatal("Effective without a client callback")
	}
}

func TestDeliveryFailsForGoodWithoutAUsableCallback(t *testing.T) {
	e, clients := newEngine(t, nil, nil)
	clients.put(&storepb.Client{Id: "broken", Callback: &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_HTTP, Endpoint: "not a url"}})
	tk := task("x")
	if err := deliver(e, tk, 1).wait(t); !errors.Is(err, ErrNoCallback) || !IsPermanent(err) {
		t.Fatalf("no callback: %v", err)
	}
	tk.Client = "broken"
	if err := deliver(e, tk, 1).wait(t); !errors.Is(err, ErrInvalidCallback) || !IsPermanent(err) {
		t.Fatalf("bad endpoint: %v", err)
	}
	tk.Client = "nobody"
	if err := deliver(e, tk, 1).wait(t); !errors.Is(err, ErrUnknownClient) || !IsPermanent(err) {
		t.Fatalf("unknown client: %v", err)
	}
}

package delivery

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestBackoffFormula(t *testing.T) {
	exp := &storepb.RetryPolicy{Backoff: storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL, InitialIntervalMs: 1000, MaxIntervalMs: 300_000, Multiplier: 2, Jitter: 0.2}
	fixed := &storepb.RetryPolicy{Backoff: storepb.BackoffKind_BACKOFF_KIND_FIXED, InitialIntervalMs: 1500, MaxIntervalMs: 1500, Multiplier: 2, Jitter: 0.5}
	for _, tc := range []struct {
		p    *storepb.RetryPolicy
		n    uint32
		u    float64
		want time.Duration
	}{
		{exp, 1, 0, time.Second},
		{exp, 2, 0, 2 * time.Second},
		{exp, 5, 0, 16 * time.Second},
		{exp, 9, 0, 256 * time.Second},
		{exp, 10, 0, 5 * time.Minute}, // 512 s, capped
		{exp, 1000, 0, 5 * time.Minute},
		{exp, 1, 0.5, 900 * time.Millisecond}, // jitter only shortens
		{exp, 10, 0.5, 270 * time.Second},
		{fixed, 1, 0, 1500 * time.Millisecond},
		{fixed, 7, 0, 1500 * time.Millisecond},
		{fixed, 7, 0.5, 1125 * time.Millisecond},
	} {
		// Within a microsecond: float arithmetic.
		if got := Backoff(tc.p, tc.n, tc.u); got < tc.want-time.Microsecond || got > tc.want+time.Microsecond {
			t.Errorf("Backoff(%v, n=%d, u=%g) = %v, want %v", tc.p.Backoff, tc.n, tc.u, got, tc.want)
		}
	}
}

func TestEffectivePolicyFieldByField(t *testing.T) {
	e, clients := newEngine(t, tcpCallback("a.example:1"), func(c *Config) {
		c.DefaultRetry = &storepb.RetryPolicy{MaxAttempts: 4, InitialIntervalMs: 100, MaxIntervalMs: 100_000, Jitter: 0.000001}
	})
	clients.put(&storepb.Client{Id: "acme", Callback: tcpCallback("a.example:1"),
		Retry: &storepb.RetryPolicy{Backoff: storepb.BackoffKind_BACKOFF_KIND_FIXED, InitialIntervalMs: 2000}})
	m := newManualTransport()
	e.byProto[storepb.Protocol_PROTOCOL_TCP] = m
	// Next knows a client only once a delivery has loaded it.
	tk := task("x")
	if p := e.policy(tk); p.Backoff != storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL || p.InitialIntervalMs != 100 {
		t.Fatalf("before loading the client: %v, want the engine default", p)
	}
	o := deliver(e, tk, 1)
	m.take(t).finish(errors.New("boom"))
	err := o.wait(t)

	// The client's fields over the default.
	p := e.policy(tk)
	if p.Backoff != storepb.BackoffKind_BACKOFF_KIND_FIXED || p.InitialIntervalMs != 2000 || p.MaxAttempts != 4 || p.MaxIntervalMs != 100_000 {
		t.Fatalf("client policy %v", p)
	}
	if d, retry := e.Next(tk, 3, err); !retry || d < 1990*time.Millisecond || d > 2*time.Second {
		t.Fatalf("attempt 3 of 4: delay %v retry %v, want about 2s", d, retry)
	}
	if _, retry := e.Next(tk, 4, err); retry {
		t.Fatal("attempt 4 of 4 is retried")
	}
	// The task's fields over the client's.
	tk.Retry = &storepb.RetryPolicy{MaxAttempts: 6, Backoff: storepb.BackoffKind_BACKOFF_KIND_EXPONENTIAL, Multiplier: 3}
	if d, retry := e.Next(tk, 3, err); !retry || d < 17900*time.Millisecond || d > 18*time.Second {
		t.Fatalf("task override, attempt 3: delay %v retry %v, want about 2s × 3²", d, retry)
	}
	if _, retry := e.Next(tk, 5, err); !retry {
		t.Fatal("attempt 5 of 6 is not retried")
	}
	if _, retry := e.Next(tk, 6, err); retry {
		t.Fatal("attempt 6 of 6 is retried")
	}
}

func TestPermanentFailuresAreNotRetried(t *testing.T) {
	e, _ := newEngine(t, nil, nil)
	tk := task("x")
	for _, err := range []error{
		permanent(ErrNoCallback),
		permanent(&StatusError{Code: 404}),
		permanent(ErrUnknownClient),
	} {
		if _, retry := e.Next(tk, 1, err); retry {
			t.Errorf("%v is retried", err)
		}
	}
	for _, err := range []error{ErrTimeout, ErrUnreachable, &StatusError{Code: 503}, errors.New("anything else")} {
		if _, retry := e.Next(tk, 1, err); !retry {
			t.Errorf("%v is not retried", err)
		}
	}
	// Overload and shutdown are local refusals: the scheduler puts the
	// attempt back without asking Next, so they never use up attempts.
	for _, err := range []error{ErrPoolFull, ErrClosed, fmt.Errorf("wrapped: %w", ErrPoolFull)} {
		if !errors.Is(err, scheduler.ErrNotAttempted) {
			t.Errorf("%v is not a local refusal", err)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	clients := newClientMap()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no clients", Config{}},
		{"negative pool", Config{Clients: clients, Pools: map[string]PoolConfig{"p": {MaxConcurrent: -1}}}},
		{"negative rate", Config{Clients: clients, Pools: map[string]PoolConfig{"p": {MaxPerSecond: -1}}}},
		{"empty pool name", Config{Clients: clients, Pools: map[string]PoolConfig{"": {}}}},
		{"timeout too long", Config{Clients: clients, DefaultTimeout: time.Hour}},
		{"jitter", Config{Clients: clients, DefaultRetry: &storepb.RetryPolicy{Jitter: 2}}},
		{"multiplier", Config{Clients: clients, DefaultRetry: &storepb.RetryPolicy{Multiplier: 0.5}}},
		{"intervals", Config{Clients: clients, DefaultRetry: &storepb.RetryPolicy{InitialIntervalMs: 10_000, MaxIntervalMs: 5000}}},
		{"attempts", Config{Clients: clients, DefaultRetry: &storepb.RetryPolicy{MaxAttempts: 5000}}},
		{"tcp conns", Config{Clients: clients, TCPConns: 1000}},
		{"redial", Config{Clients: clients, RedialMin: time.Minute, RedialMax: time.Second}},
	} {
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("%s: New accepted %+v", tc.name, tc.cfg)
		}
	}
}

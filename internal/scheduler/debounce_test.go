package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Debounced registrations push the task back until the max wait; once
// its attempt has started, the next registration creates a task that
// waits behind it in its group.
func TestDebounce(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	req := func(p string) RegisterRequest {
		return RegisterRequest{Client: "acme", Group: "g", Payload: payload(p), ReplaceKey: "k", Debounce: 2 * time.Second, MaxWait: 5 * time.Second}
	}
	first, created, err := h.s.Register(ctx, req("v1"))
	if err != nil || !created {
		t.Fatalf("first registration: created %v, %v", created, err)
	}
	for i, p := range []string{"v2", "v3", "v4"} {
		h.advance(1500 * time.Millisecond)
		v, created, err := h.s.Register(ctx, req(p))
		if err != nil || created || v.Task.Id != first.Task.Id {
			t.Fatalf("registration %d: task %d created %v, %v; want task %d replaced", i+2, v.Task.Id, created, err, first.Task.Id)
		}
		// Due 2 s after this registration, but at most 5 s after the first.
		want := epoch.Add(min(h.clock.Since(epoch)+2*time.Second, 5*time.Second))
		if got := time.UnixMilli(v.Task.DueMs); !got.Equal(want) {
			t.Fatalf("registration %d: due %v, want %v", i+2, got.Sub(epoch), want.Sub(epoch))
		}
		h.none()
	}
	h.advance(500 * time.Millisecond) // 5 s: the max wait
	a := h.expect("v4", 1)
	// Under way: never replaced; a new task waits behind it.
	v, created, err := h.s.Register(ctx, RegisterRequest{Client: "acme", Group: "g", Payload: payload("v5"), ReplaceKey: "k"})
	if err != nil || !created || v.Task.Id == first.Task.Id {
		t.Fatalf("registration while delivering: task %d created %v, %v", v.Task.Id, created, err)
	}
	h.none()
	h.ack(a)
	h.ack(h.expect("v5", 1))
	h.none()
}

// Two registrations with one key in one batch: the second replaces the
// task the first creates, before either is durable.
func TestReplaceWithinABatch(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.s.RegisterBatch(context.Background(), []RegisterRequest{
		{Client: "acme", Payload: payload("old"), ReplaceKey: "k", Delay: time.Hour},
		{Client: "acme", Payload: payload("new"), ReplaceKey: "k", Delay: time.Second},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("batch: %v, %+v", err, res)
	}
	if !res[0].Created || res[1].Created || res[1].View.Task.Id != res[0].View.Task.Id {
		t.Fatalf("batch: %+v", res)
	}
	h.advance(time.Second)
	h.ack(h.expect("new", 1))
	h.none()
}

func TestReplaceRejects(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		req   RegisterRequest
		field string
	}{
		{RegisterRequest{ReplaceKey: "k", IdempotencyKey: "i"}, "replace_key"},
		{RegisterRequest{ReplaceKey: "k", Interval: time.Minute}, "replace_key"},
		{RegisterRequest{ReplaceKey: "k\x00"}, "replace_key"},
		{RegisterRequest{Debounce: time.Second}, "debounce_ms"},
		{RegisterRequest{ReplaceKey: "k", Debounce: time.Second, Delay: time.Second}, "debounce_ms"},
		{RegisterRequest{ReplaceKey: "k", MaxWait: time.Second}, "max_wait_ms"},
		{RegisterRequest{ReplaceKey: "k", Debounce: -time.Second}, "debounce_ms"},
	} {
		tc.req.Client = "acme"
		_, _, err := h.s.Register(context.Background(), tc.req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Register(%+v): %v, want an invalid %s", tc.req, err, tc.field)
		}
	}
}

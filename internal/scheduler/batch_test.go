package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Each task of a batch succeeds or fails on its own, and the successful
// ones are durable when the batch returns.
func TestRegisterBatchAnswersEachTask(t *testing.T) {
	h := newPowerHarness(t, func(c *Config) { c.GroupLimit = func(string) int { return 2 } })
	reqs := []RegisterRequest{
		{Client: "acme", Payload: payload("a"), Group: "g", Delay: time.Hour},
		{Client: "acme", Payload: payload("b"), Group: "g", Delay: time.Hour},
		{Client: "acme", Payload: payload("c"), Group: "g", Delay: time.Hour}, // the group is full
		{Client: "acme", Payload: payload("d"), Delay: -time.Second},          // invalid
		{Client: "acme", Payload: payload("e"), IdempotencyKey: "k", Delay: time.Hour},
		{Client: "acme", Payload: payload("f"), IdempotencyKey: "k", Delay: time.Hour}, // the same key
		{Client: "globex", Payload: payload("g"), Delay: time.Hour},
	}
	res, err := h.s.RegisterBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 4, 6} {
		if res[i].Err != nil || !res[i].Created {
			t.Errorf("task %d: %+v, want created", i, res[i])
		}
	}
	if !errors.Is(res[2].Err, ErrGroupFull) {
		t.Errorf("task 2: %v, want ErrGroupFull", res[2].Err)
	}
	var fe *FieldError
	if !errors.As(res[3].Err, &fe) || fe.Field != "delay" {
		t.Errorf("task 3: %v, want an invalid delay", res[3].Err)
	}
	if res[5].Err != nil || res[5].Created || res[5].View.Task.Id != res[4].View.Task.Id {
		t.Errorf("task 5: %+v, want task %d again", res[5], res[4].View.Task.Id)
	}
	h.powerLoss()
	for _, i := range []int{0, 1, 4, 6} {
		v := res[i].View
		if _, err := h.s.Get(context.Background(), Caller{Client: v.Task.Client}, v.Task.Id); err != nil {
			t.Errorf("task %d after a power loss: %v", i, err)
		}
	}
}

func TestRegisterBatchBounds(t *testing.T) {
	h := newHarness(t, nil)
	if res, err := h.s.RegisterBatch(context.Background(), nil); err != nil || len(res) != 0 {
		t.Fatalf("empty batch: %v, %v", res, err)
	}
	_, err := h.s.RegisterBatch(context.Background(), make([]RegisterRequest, MaxRegisterBatch+1))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized batch: %v, want ErrInvalid", err)
	}
}

// UpdateBatch answers each update on its own, makes them durable before
// it returns, and changes a group's tasks together: released at once,
// they run in the group's order.
func TestUpdateBatchAnswersEachUpdate(t *testing.T) {
	h := newPowerHarness(t, nil)
	acme := Caller{Client: "acme"}
	first := h.register(RegisterRequest{Client: "acme", Payload: payload("first"), Group: "g", Delay: time.Hour})
	second := h.register(RegisterRequest{Client: "acme", Payload: payload("second"), Group: "g", Delay: time.Hour})
	other := h.register(RegisterRequest{Client: "globex", Payload: payload("other"), Delay: time.Hour})
	now := h.clock.Now()
	res, err := h.s.UpdateBatch(context.Background(), acme, []UpdateRequest{
		{ID: first.Task.Id, At: &now},
		{ID: second.Task.Id, At: &now},
		{ID: other.Task.Id, At: &now},        // another client's
		{ID: first.Task.Id + 1000, At: &now}, // no such task
		{ID: second.Task.Id},                 // changes nothing
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if res[i].Err != nil || res[i].View.Task.DueMs != now.UnixMilli() {
			t.Errorf("update %d: %+v, want due at %d", i, res[i], now.UnixMilli())
		}
	}
	for _, i := range []int{2, 3} {
		if !errors.Is(res[i].Err, ErrNotFound) {
			t.Errorf("update %d: %v, want ErrNotFound", i, res[i].Err)
		}
	}
	var fe *FieldError
	if !errors.As(res[4].Err, &fe) || fe.Field != "update" {
		t.Errorf("update 4: %v, want an invalid update", res[4].Err)
	}
	h.powerLoss()
	h.ack(h.expect("first", 1))
	h.ack(h.expect("second", 1))
	if _, err := h.s.UpdateBatch(context.Background(), acme, make([]UpdateRequest, MaxRegisterBatch+1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized batch: %v, want ErrInvalid", err)
	}
}

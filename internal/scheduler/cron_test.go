package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCronAcrossSpringForward: a cron task whose local time is skipped
// fires once at the end of the gap, then goes on at its local time; a
// group's cron task keeps its place among its siblings.
func TestCronAcrossSpringForward(t *testing.T) {
	h := newHarness(t, nil)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 7, 12, 0, 0, 0, ny)
	h.advance(start.Sub(epoch))
	v := h.register(RegisterRequest{Payload: payload("cron"), Group: "g", Cron: "30 2 * * *", TimeZone: "America/New_York"})
	gap := time.Date(2026, 3, 8, 3, 0, 0, 0, ny) // 02:30 does not exist that night
	if got := time.UnixMilli(v.Task.DueMs); !got.Equal(gap) {
		t.Fatalf("first occurrence %v, want %v", got.In(ny), gap)
	}
	// A sibling due at the same instant was accepted later: it goes second.
	h.register(RegisterRequest{Payload: payload("sibling"), Group: "g", At: gap})
	h.advance(gap.Sub(h.clock.Now()))
	h.ack(h.expect("cron", 1))
	h.ack(h.expect("sibling", 1))
	h.none()
	got, err := h.s.Get(context.Background(), acme, v.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 3, 9, 2, 30, 0, 0, ny); !time.UnixMilli(got.Task.DueMs).Equal(want) {
		t.Fatalf("next occurrence %v, want %v", time.UnixMilli(got.Task.DueMs).In(ny), want)
	}
	if got.Task.Fires != 1 {
		t.Fatalf("fires %d, want 1", got.Task.Fires)
	}
}

// TestCronAcrossFallBack: a local time the clocks pass twice fires once,
// at its first instant, and the schedule goes on the next day.
func TestCronAcrossFallBack(t *testing.T) {
	h := newHarness(t, nil)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Date(2026, 10, 31, 12, 0, 0, 0, ny).Sub(epoch))
	v := h.register(RegisterRequest{Payload: payload("cron"), Cron: "30 1 * * *", TimeZone: "America/New_York"})
	first := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC) // 01:30 EDT
	if got := time.UnixMilli(v.Task.DueMs); !got.Equal(first) {
		t.Fatalf("first occurrence %v, want %v", got.In(ny), first.In(ny))
	}
	h.advance(first.Sub(h.clock.Now()))
	h.ack(h.expect("cron", 1))
	h.advance(time.Hour) // 01:30 EST: the same local time again
	h.none()
	got, err := h.s.Get(context.Background(), acme, v.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC); !time.UnixMilli(got.Task.DueMs).Equal(want) { // 01:30 EST
		t.Fatalf("next occurrence %v, want %v", time.UnixMilli(got.Task.DueMs).In(ny), want.In(ny))
	}
}

// TestCronAfterDowntime: occurrences missed while nothing ran fire once,
// and the schedule goes on at the first occurrence after now.
func TestCronAfterDowntime(t *testing.T) {
	h := newHarness(t, nil)
	v := h.register(RegisterRequest{Payload: payload("tick"), Cron: "*/10 * * * *", TimeZone: "Europe/Zurich", Delay: time.Minute})
	h.crash()
	h.clock.Advance(time.Hour + 5*time.Minute)
	h.open()
	h.settle()
	h.ack(h.expect("tick", 1))
	h.none()
	got, err := h.s.Get(context.Background(), acme, v.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if want := epoch.Add(time.Hour + 10*time.Minute); !time.UnixMilli(got.Task.DueMs).Equal(want) {
		t.Fatalf("next occurrence %v, want %v", time.UnixMilli(got.Task.DueMs).UTC(), want)
	}
}

func TestCronRejects(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		req   RegisterRequest
		field string
	}{
		{RegisterRequest{Cron: "0 9 * * MON-FRI", Interval: time.Minute}, "cron"},
		{RegisterRequest{Cron: "0 9 * * FUNDAY"}, "cron"},
		{RegisterRequest{Cron: "0 0 30 2 *"}, "cron"},
		{RegisterRequest{Cron: "0 9 * * *", TimeZone: "Europe/Atlantis"}, "time_zone"},
		{RegisterRequest{TimeZone: "Europe/Zurich"}, "time_zone"},
	} {
		tc.req.Client = "acme"
		_, _, err := h.s.Register(context.Background(), tc.req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Register(%q, %q): %v, want an invalid %s", tc.req.Cron, tc.req.TimeZone, err, tc.field)
		}
	}
}

// An update gives a task a cron schedule, starting at its first
// occurrence, or takes it away.
func TestCronUpdate(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	v := h.register(RegisterRequest{Payload: payload("x"), Delay: time.Hour})
	half := "30 * * * *"
	got, err := h.s.Update(ctx, acme, UpdateRequest{ID: v.Task.Id, Cron: &half, TimeZone: "Asia/Kathmandu"})
	if err != nil {
		t.Fatal(err)
	}
	// Kathmandu is 5:45 ahead: minute 30 there is minute 45 in UTC.
	if got.Task.Cron != half || !time.UnixMilli(got.Task.DueMs).Equal(epoch.Add(45*time.Minute)) {
		t.Fatalf("with a cron schedule: %v due %v", got.Task.Cron, time.UnixMilli(got.Task.DueMs).Sub(epoch))
	}
	none := ""
	at := epoch.Add(2 * time.Hour)
	if got, err = h.s.Update(ctx, acme, UpdateRequest{ID: v.Task.Id, Cron: &none, At: &at}); err != nil {
		t.Fatal(err)
	}
	if got.Task.Cron != "" || got.Task.TimeZone != "" || recurring(got.Task) || got.Task.DueMs != at.UnixMilli() {
		t.Fatalf("without: %v", got.Task)
	}
	keyed := h.register(RegisterRequest{Payload: payload("y"), ReplaceKey: "k", Delay: time.Hour})
	_, err = h.s.Update(ctx, acme, UpdateRequest{ID: keyed.Task.Id, Cron: &half})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "replace_key" {
		t.Fatalf("a cron schedule for a task with a replace key: %v", err)
	}
	if _, err = h.s.Update(ctx, acme, UpdateRequest{ID: v.Task.Id, TimeZone: "UTC", Payload: payload("z")}); !errors.As(err, &fe) || fe.Field != "time_zone" {
		t.Fatalf("a time zone without a schedule: %v", err)
	}
}

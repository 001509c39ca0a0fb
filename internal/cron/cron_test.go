package cron

import (
	"errors"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestNextAcrossChanges walks schedules over clock changes in zones that
// move by an hour at night (New York, Zurich), by half an hour (Lord
// Howe), and at midnight (Santiago), forwards and back.
func TestNextAcrossChanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tz, expr, from string
		want                 []string
	}{
		{"skipped time fires at the gap's end", "America/New_York", "30 2 * * *", "2026-03-07T03:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"several skipped times fire once", "America/New_York", "*/30 2-3 * * *", "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"repeated time fires once", "America/New_York", "30 1 * * *", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"repeated hour fires once", "America/New_York", "*/20 1-2 * * *", "2026-11-01T00:50:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00",
				"2026-11-01T02:00:00-05:00", "2026-11-01T02:20:00-05:00"}},
		{"weekdays over the spring change", "Europe/Zurich", "0 9 * * MON-FRI", "2026-03-27T10:00:00+01:00",
			[]string{"2026-03-30T09:00:00+02:00", "2026-03-31T09:00:00+02:00"}},
		{"named day in the gap", "Europe/Zurich", "30 2 * * SUN", "2026-03-28T00:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-04-05T02:30:00+02:00"}},
		{"autumn repeat", "Europe/Zurich", "30 2 * * *", "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"half-hour gap", "Australia/Lord_Howe", "15 2 * * *", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"half-hour repeat", "Australia/Lord_Howe", "45 1 * * *", "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"skipped midnight", "America/Santiago", "0 0 * * *", "2026-09-05T12:00:00-04:00",
			[]string{"2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"}},
		{"repeated hour before midnight", "America/Santiago", "30 23 * * *", "2026-04-04T12:00:00-03:00",
			[]string{"2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00"}},
		{"seconds and month names", "UTC", "*/20 0 0 1 JAN,JUL *", "2026-06-30T00:00:00Z",
			[]string{"2026-07-01T00:00:00Z", "2026-07-01T00:00:20Z", "2026-07-01T00:00:40Z", "2027-01-01T00:00:00Z"}},
		{"descriptor", "", "@daily", "2026-06-30T00:00:00Z",
			[]string{"2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.expr, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			prev := mustTime(t, tc.from)
			for i, w := range tc.want {
				got := s.Next(prev, prev)
				if want := mustTime(t, w); !got.Equal(want) {
					t.Fatalf("occurrence %d after %v: got %v, want %v", i, prev.In(s.loc), got.In(s.loc), want)
				}
				prev = got
			}
		})
	}
}

// TestNextNotBefore: a schedule that fell behind goes on at the first
// occurrence at or after now, and never fires a local time twice.
func TestNextNotBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tz, expr, prev, now, want string
	}{
		{"missed occurrences fire once", "UTC", "*/10 * * * * *", "2026-05-01T10:00:00Z", "2026-05-01T10:00:35Z", "2026-05-01T10:00:40Z"},
		{"now on an occurrence", "UTC", "*/10 * * * * *", "2026-05-01T10:00:00Z", "2026-05-01T10:00:40Z", "2026-05-01T10:00:40Z"},
		{"behind across a repeat", "America/New_York", "*/15 * * * *", "2026-11-01T01:45:00-04:00", "2026-11-01T01:10:00-05:00", "2026-11-01T02:00:00-05:00"},
		{"registered in the repeat", "America/New_York", "*/15 * * * *", "2026-11-01T01:10:00-05:00", "2026-11-01T01:10:00-05:00", "2026-11-01T01:15:00-05:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.expr, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(mustTime(t, tc.prev), mustTime(t, tc.now))
			if want := mustTime(t, tc.want); !got.Equal(want) {
				t.Fatalf("got %v, want %v", got.In(s.loc), want)
			}
		})
	}
}

func TestUpcoming(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 9 * * MON-FRI", "Europe/Zurich")
	if err != nil {
		t.Fatal(err)
	}
	got := s.Upcoming(mustTime(t, "2026-03-27T10:00:00+01:00"), 3)
	want := []string{"2026-03-30T09:00:00+02:00", "2026-03-31T09:00:00+02:00", "2026-04-01T09:00:00+02:00"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if !got[i].Equal(mustTime(t, want[i])) {
			t.Fatalf("occurrence %d: got %v, want %s", i, got[i], want[i])
		}
	}
	never, err := Parse("0 0 30 2 *", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := never.Upcoming(mustTime(t, "2026-01-01T00:00:00Z"), 3); len(got) != 0 {
		t.Fatalf("30 February: got %v", got)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, tz string }{
		{"@every 5m", ""},
		{"TZ=UTC 0 * * * *", ""},
		{"61 * * * *", ""},
		{"* * * *", ""},
		{"0 0 * * FUNDAY", ""},
		{"0 * * * *", "Mars/Olympus"},
		{"0 * * * *", "Local"},
	} {
		if _, err := Parse(tc.expr, tc.tz); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q, %q) = %v, want ErrInvalid", tc.expr, tc.tz, err)
		}
	}
}

package scheduler

import (
	"strings"
	"time"

	"github.com/boomerangd/boomerang/internal/cron"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A cron task repeats on a calendar schedule (package cron) instead of a
// fixed interval. Like every other time, its occurrences are computed by
// the shard's leader when it decides a registration or an outcome, and
// the record carries the result: the first occurrence at or after the
// registration's due time, then each next one after the previous due
// time, or, when that is already past, the first at or after now.

// validateCron checks a registration's schedule and that it has an
// occurrence.
func validateCron(req *RegisterRequest, now time.Time) error {
	if req.Cron == "" {
		if req.TimeZone != "" {
			return invalid("time_zone", "needs a cron schedule")
		}
		return nil
	}
	if req.Interval != 0 {
		return invalid("cron", "cannot be set together with a repeat interval")
	}
	s, err := cron.Parse(req.Cron, req.TimeZone)
	if err != nil {
		return cronError(err)
	}
	if s.Next(now, now).IsZero() {
		return invalid("cron", "%q has no occurrence in the next five years", req.Cron)
	}
	return nil
}

// validateCronUpdate checks an update's new schedule.
func validateCronUpdate(req *UpdateRequest, now time.Time) error {
	switch {
	case req.Cron == nil && req.TimeZone != "":
		return invalid("time_zone", "needs a cron schedule")
	case req.Cron == nil:
		return nil
	case *req.Cron == "" && req.TimeZone != "":
		return invalid("time_zone", "needs a cron schedule")
	case *req.Cron != "" && req.Interval != nil:
		return invalid("cron", "cannot be set together with a repeat interval")
	case *req.Cron == "":
		return nil
	}
	return validateCron(&RegisterRequest{Cron: *req.Cron, TimeZone: req.TimeZone}, now)
}

// setCron gives a task an update's new schedule, and with it a new
// occurrence: the first at or after the update's due time, or now.
func setCron(upd *storepb.Task, req *UpdateRequest, nowMs int64) {
	upd.Cron, upd.TimeZone = *req.Cron, req.TimeZone
	if upd.Cron == "" {
		return
	}
	base := nowMs
	if req.At != nil {
		base = req.At.UnixMilli()
	}
	upd.IntervalMs = 0
	upd.DueMs = cronFirst(upd.Cron, upd.TimeZone, base)
	upd.Attempts, upd.NextAttemptMs, upd.LastError = 0, 0, ""
}

// cronError names the field a schedule's error is about.
func cronError(err error) error {
	msg := strings.TrimPrefix(err.Error(), cron.ErrInvalid.Error()+": ")
	if strings.Contains(msg, "time zone") {
		return invalid("time_zone", "%s", msg)
	}
	return invalid("cron", "%s", msg)
}

// cronFirst is a new cron task's first occurrence at or after dueMs, or
// dueMs itself if the schedule has none (validation makes sure it has).
func cronFirst(expr, tz string, dueMs int64) int64 {
	s, err := cron.Parse(expr, tz)
	if err != nil {
		return dueMs
	}
	from := time.UnixMilli(dueMs)
	if at := s.Next(from.Add(-time.Millisecond), from); !at.IsZero() {
		return at.UnixMilli()
	}
	return dueMs
}

// cronNext is a cron task's next due time after its current occurrence,
// at or after now; ok is false when the schedule has no more.
func cronNext(t *storepb.Task, now time.Time) (int64, bool) {
	s, err := cron.Parse(t.Cron, t.TimeZone)
	if err != nil {
		return 0, false
	}
	at := s.Next(time.UnixMilli(t.DueMs), now)
	return at.UnixMilli(), !at.IsZero()
}

// Upcoming returns up to n occurrences of a cron task after its current
// one; nil for any other task.
func Upcoming(t *storepb.Task, n int) []time.Time {
	if t.Cron == "" {
		return nil
	}
	s, err := cron.Parse(t.Cron, t.TimeZone)
	if err != nil {
		return nil
	}
	return s.Upcoming(time.UnixMilli(t.DueMs), n)
}

// recurring reports whether a task has occurrences after this one.
func recurring(t *storepb.Task) bool { return t.IntervalMs > 0 || t.Cron != "" }

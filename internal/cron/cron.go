// Package cron computes the occurrences of cron schedules in a time zone.
//
// Expressions are parsed by github.com/robfig/cron/v3: five fields
// (minute, hour, day of month, month, day of week) or six with seconds
// first, names for months and days (JAN, MON-FRI), ranges, lists and
// steps, and the descriptors @yearly, @monthly, @weekly, @daily and
// @hourly. That library's own Next walks absolute time, so a local time
// skipped by a daylight saving change never fires and a repeated one
// fires twice; this package walks local wall-clock time instead and maps
// each match to an instant by these rules:
//
//   - A local time that does not exist (skipped when clocks go forward)
//     fires once, at the first valid instant after the gap. Several
//     skipped times of one schedule fire once together.
//   - A local time that exists twice (repeated when clocks go back)
//     fires once, at the first of its instants that is still to come.
//
// Occurrences move forward in local time: a schedule never fires twice
// for the same local time, even across a change.
package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // every node computes with the same zone database

	robfig "github.com/robfig/cron/v3"
)

// Limits on expressions and zone names.
const (
	MaxExprLen     = 256
	MaxTimeZoneLen = 64
)

// ErrInvalid: an expression or time zone that cannot be used.
var ErrInvalid = errors.New("cron: invalid schedule")

var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour |
	robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// Schedule is a parsed expression in a time zone.
type Schedule struct {
	fields *robfig.SpecSchedule // matched against local time written as UTC
	loc    *time.Location
}

// Parse parses expr in the IANA time zone tz ("" = UTC).
func Parse(expr, tz string) (*Schedule, error) {
	switch {
	case len(expr) > MaxExprLen:
		return nil, fmt.Errorf("%w: expression longer than %d bytes", ErrInvalid, MaxExprLen)
	case len(tz) > MaxTimeZoneLen:
		return nil, fmt.Errorf("%w: time zone longer than %d bytes", ErrInvalid, MaxTimeZoneLen)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, fmt.Errorf("%w: give the time zone on its own, not in the expression", ErrInvalid)
	case tz == "Local":
		return nil, fmt.Errorf("%w: time zone %q depends on the server; name a zone", ErrInvalid, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%w: unknown time zone %q", ErrInvalid, tz)
	}
	parsed, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	fields, ok := parsed.(*robfig.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a calendar schedule; use a repeat interval", ErrInvalid, expr)
	}
	fields.Location = time.UTC
	return &Schedule{fields: fields, loc: loc}, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first occurrence after prev, at or after notBefore,
// whose local time is later than prev's; the zero time if there is none
// within five years (an expression such as "0 0 30 2 *").
func (s *Schedule) Next(prev, notBefore time.Time) time.Time {
	floor := prev
	if notBefore.After(floor) {
		floor = notBefore.Add(-time.Nanosecond)
	}
	wall := localAsUTC(prev.In(s.loc))
	if w := localAsUTC(floor.In(s.loc)); w.After(wall) {
		wall = w
	}
	for range maxRejected {
		wall = s.fields.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		if at := s.instant(wall, floor); !at.IsZero() {
			return at
		}
	}
	return time.Time{}
}

// maxRejected bounds the local times passed over because their every
// instant is too early: only times repeated by a change, at most a few
// hours of them at one per second, can be.
const maxRejected = 4 * 3600

// Upcoming returns up to n occurrences after now.
func (s *Schedule) Upcoming(now time.Time, n int) []time.Time {
	var out []time.Time
	prev := now
	for len(out) < n {
		at := s.Next(prev, prev)
		if at.IsZero() {
			break
		}
		out = append(out, at)
		prev = at
	}
	return out
}

// instant maps a local time (written as UTC) to the first instant after
// floor that shows it, or to the end of the gap it falls in.
func (s *Schedule) instant(wall, floor time.Time) time.Time {
	u := wall.Unix()
	var first time.Time
	for _, off := range s.offsetsNear(u) {
		at := time.Unix(u-int64(off), int64(wall.Nanosecond()))
		if _, o := at.In(s.loc).Zone(); o != off || !at.After(floor) {
			continue
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if !first.IsZero() || s.exists(u) {
		return first
	}
	// Skipped: the clocks jumped over it, at the end of the zone period
	// that an instant with the later offset still falls in.
	_, after := time.Unix(u+2*day, 0).In(s.loc).Zone()
	_, end := time.Unix(u-int64(after), 0).In(s.loc).ZoneBounds()
	if !end.After(floor) {
		return time.Time{}
	}
	return end
}

const day = 24 * 3600

// offsetsNear returns the zone offsets in effect within two days of the
// local time u: enough to see any one change.
func (s *Schedule) offsetsNear(u int64) []int {
	_, before := time.Unix(u-2*day, 0).In(s.loc).Zone()
	_, after := time.Unix(u+2*day, 0).In(s.loc).Zone()
	if before == after {
		return []int{before}
	}
	return []int{before, after}
}

// exists reports whether the local time u is shown by some instant.
func (s *Schedule) exists(u int64) bool {
	for _, off := range s.offsetsNear(u) {
		if _, o := time.Unix(u-int64(off), 0).In(s.loc).Zone(); o == off {
			return true
		}
	}
	return false
}

// localAsUTC writes t's local wall-clock time as a UTC time, on which the
// expression's fields are matched: UTC has no changes to skip or repeat.
func localAsUTC(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

package boomtool

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// rateFlags are the rate limit flags of "client register" and "client
// update": a default for the client's groups, and groups' own.
type rateFlags struct {
	rate     string
	perGroup []string
}

func (r *rateFlags) register(f *pflag.FlagSet) {
	f.StringVar(&r.rate, "group-rate", "", "deliveries each of its groups may start per interval, e.g. 10/1s (0: no limit)")
	f.StringArrayVar(&r.perGroup, "group-rate-for", nil, "a group's own rate, GROUP=10/1s (GROUP=0: the default again); repeatable")
}

// limits returns the limits the flags give: def is nil when --group-rate
// is not given.
func (r *rateFlags) limits() (def *boomerangv1.RateLimit, groups map[string]*boomerangv1.RateLimit, err error) {
	if r.rate != "" {
		if def, err = parseRate("--group-rate", r.rate); err != nil {
			return nil, nil, err
		}
	}
	for _, v := range r.perGroup {
		group, rate, ok := strings.Cut(v, "=")
		if !ok || group == "" {
			return nil, nil, usagef("bad --group-rate-for %q: want GROUP=N/DURATION", v)
		}
		limit, err := parseRate("--group-rate-for", rate)
		if err != nil {
			return nil, nil, err
		}
		if groups == nil {
			groups = make(map[string]*boomerangv1.RateLimit)
		}
		groups[group] = limit
	}
	return def, groups, nil
}

// parseRate reads N/DURATION ("10/1s"), or 0 for none.
func parseRate(flag, s string) (*boomerangv1.RateLimit, error) {
	if s == "0" {
		return &boomerangv1.RateLimit{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.ParseUint(n, 10, 32)
	if !ok || err != nil || count == 0 {
		return nil, usagef("bad %s %q: want N/DURATION, e.g. 10/1s, or 0", flag, s)
	}
	var d durationFlag
	if err := d.Set(per); err != nil || d.d <= 0 {
		return nil, usagef("bad %s %q: want N/DURATION, e.g. 10/1s, or 0", flag, s)
	}
	return &boomerangv1.RateLimit{MaxDeliveries: uint32(count), IntervalMs: d.d.Milliseconds()}, nil
}

// rateString prints a rate limit: "10 per 1s".
func rateString(r *boomerangv1.RateLimit) string {
	if r.GetMaxDeliveries() == 0 {
		return ""
	}
	return fmt.Sprintf("%d per %s", r.GetMaxDeliveries(), humanDuration(time.Duration(r.GetIntervalMs())*time.Millisecond))
}

// groupRatesString prints groups' own rate limits, by group name.
func groupRatesString(rs map[string]*boomerangv1.RateLimit) string {
	var out []string
	for _, g := range slices.Sorted(maps.Keys(rs)) {
		out = append(out, fmt.Sprintf("%s: %s", g, rateString(rs[g])))
	}
	return strings.Join(out, ", ")
}

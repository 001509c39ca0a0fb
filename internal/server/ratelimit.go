package server

import (
	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// checkGroupRates checks a client's default group rate limit and its
// groups' own.
func checkGroupRates(def *boomerangv1.RateLimit, groups map[string]*boomerangv1.RateLimit) error {
	if err := checkRateLimit("group_rate_limit", def); err != nil {
		return err
	}
	if len(groups) > auth.MaxGroupRates {
		return invalid("group_rate_limits", "at most %d groups, got %d", auth.MaxGroupRates, len(groups))
	}
	for g, r := range groups {
		if err := firstError(checkName("group_rate_limits", g, scheduler.MaxGroupLen), checkRequired("group_rate_limits", g)); err != nil {
			return err
		}
		if err := checkRateLimit("group_rate_limits", r); err != nil {
			return err
		}
	}
	return nil
}

func checkRateLimit(field string, r *boomerangv1.RateLimit) error {
	switch {
	case r.GetMaxDeliveries() == 0:
		return nil
	case r.GetMaxDeliveries() > scheduler.MaxRateLimit:
		return invalid(field+".max_deliveries", "must be at most %d, got %d", scheduler.MaxRateLimit, r.GetMaxDeliveries())
	case r.GetIntervalMs() < 1 || r.GetIntervalMs() > maxDelayMs:
		return invalid(field+".interval_ms", "must be between 1 and %d, got %d", maxDelayMs, r.GetIntervalMs())
	}
	return nil
}

func rateFromWire(r *boomerangv1.RateLimit) *storepb.RateLimit {
	if r == nil {
		return nil
	}
	return &storepb.RateLimit{MaxDeliveries: r.MaxDeliveries, IntervalMs: r.IntervalMs}
}

func ratesFromWire(rs map[string]*boomerangv1.RateLimit) map[string]*storepb.RateLimit {
	if len(rs) == 0 {
		return nil
	}
	out := make(map[string]*storepb.RateLimit, len(rs))
	for g, r := range rs {
		out[g] = rateFromWire(r)
	}
	return out
}

func rateToWire(r *storepb.RateLimit) *boomerangv1.RateLimit {
	if r.GetMaxDeliveries() == 0 {
		return nil
	}
	return &boomerangv1.RateLimit{MaxDeliveries: r.MaxDeliveries, IntervalMs: r.IntervalMs}
}

func ratesToWire(rs map[string]*storepb.RateLimit) map[string]*boomerangv1.RateLimit {
	if len(rs) == 0 {
		return nil
	}
	out := make(map[string]*boomerangv1.RateLimit, len(rs))
	for g, r := range rs {
		out[g] = rateToWire(r)
	}
	return out
}

// limitToWire shows a group's rate limit in effect.
func limitToWire(l scheduler.RateLimit) *boomerangv1.RateLimit {
	if l.Max <= 0 {
		return nil
	}
	return &boomerangv1.RateLimit{MaxDeliveries: uint32(l.Max), IntervalMs: l.Per.Milliseconds()}
}

package auth

import (
	"maps"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A client's groups may be rate limited: each group by its own limit
// (GroupRates), or else by the client's default for its groups
// (GroupRate). The scheduler asks GroupRate whenever a group's next
// attempt is due, so it reads the cached record and copies nothing.

// MaxGroupRates bounds the groups a client gives limits of their own.
const MaxGroupRates = 1000

// GroupRate returns the rate limit of a client's group; zero when there
// is none or the client is unknown.
func (a *Auth) GroupRate(client, group string) scheduler.RateLimit {
	e, ok := a.lookup(client)
	if !ok {
		return scheduler.RateLimit{}
	}
	r := e.rec.GroupRateLimit
	if own, ok := e.rec.GroupRateLimits[group]; ok {
		r = own
	}
	return scheduler.RateLimit{Max: int(r.GetMaxDeliveries()), Per: time.Duration(r.GetIntervalMs()) * time.Millisecond}
}

// setGroupRates applies a client's rate limits: rate replaces the
// default when set (a zero max removes it), and each of groups sets that
// group's own (a zero max removes it).
func setGroupRates(rec *storepb.Client, setDefault bool, rate *storepb.RateLimit, groups map[string]*storepb.RateLimit) error {
	if setDefault {
		rec.GroupRateLimit = nil
		if rate.GetMaxDeliveries() > 0 {
			rec.GroupRateLimit = proto.CloneOf(rate)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	own := maps.Clone(rec.GroupRateLimits)
	if own == nil {
		own = make(map[string]*storepb.RateLimit, len(groups))
	}
	for g, r := range groups {
		if r.GetMaxDeliveries() == 0 {
			delete(own, g)
			continue
		}
		own[g] = proto.CloneOf(r)
	}
	if len(own) > MaxGroupRates {
		return invalidField("group_rate_limits", "at most %d groups, got %d", MaxGroupRates, len(own))
	}
	rec.GroupRateLimits = own
	return nil
}

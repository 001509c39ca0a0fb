package omsload

import (
	"slices"
)

// scenario is a named load pattern.
type scenario struct {
	orders   int  // default number of orders
	accounts int  // default number of accounts (other than the hot one)
	hot      bool // one account gets HotShare of the orders, on its own connection
	uncorr   bool // every order has correlation id -1
	mix      []weighted
}

// weighted is one kind of order and its share, in percent, of a mix.
type weighted struct {
	kind    kind
	percent int
}

var allValid = []weighted{{kindValid, 100}}

// mixed is the mixed scenario's proportions: 70 % valid, 10 % malformed
// (BAD_MSG, five ways), 20 % failing stage 2 (five reasons).
var mixed = []weighted{
	{kindValid, 70},
	{kindMissingSymbol, 2}, {kindBadSide, 2}, {kindZeroQty, 2}, {kindBadPrice, 2}, {kindUndecodable, 2},
	{kindUnknownSymbol, 2}, {kindHalted, 4}, {kindQtyLimit, 5}, {kindPriceBand, 5}, {kindNotional, 4},
}

var scenarios = map[string]scenario{
	// Many accounts, few orders each: throughput and parallelism.
	"many-families": {orders: 100_000, accounts: 10_000, mix: allValid},
	// One account with 30k orders beside 1,000 others: fairness. The hot
	// account is serialized; the others must not wait for it.
	"hot-family": {orders: 60_000, accounts: 1_000, hot: true, mix: allValid},
	// No correlation at all: spread over every partition, never gated.
	"uncorrelated": {orders: 100_000, uncorr: true, mix: allValid},
	// Valid, malformed and risk-failing orders in known proportions.
	"mixed": {orders: 100_000, accounts: 1_000, mix: mixed},
}

// Scenarios returns the scenario names.
func Scenarios() []string {
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// hotAccount is the hot-family scenario's hot correlation id; the other
// accounts are numbered from 2.
const hotAccount = 1

// Latency groups of the hot-family scenario.
const (
	groupHot    = "hot"
	groupOthers = "others"
)

// streamPlan is what one connection sends.
type streamPlan struct {
	accounts []int64 // correlation ids it owns; {-1} when uncorrelated
	orders   int     // -1: until the deadline
	rate     float64 // orders/s; 0 = closed loop
	group    string  // latency group, "" for none
	phase    float64 // fraction of an interval to delay the schedule, to stagger connections
}

// plan splits cfg's load over connections.
func plan(cfg *Config) []streamPlan {
	sc := scenarios[cfg.Scenario]
	var plans []streamPlan
	othersShare := 1.0
	if sc.hot {
		othersShare = 1 - cfg.HotShare
		if !cfg.NoHot {
			plans = append(plans, streamPlan{accounts: []int64{hotAccount}, group: groupHot})
			plans[0].orders, plans[0].rate = split(cfg, cfg.HotShare, 0, 1)
		}
	}
	first := int64(1)
	if sc.hot {
		first = hotAccount + 1
	}
	for i := range cfg.Conns {
		p := streamPlan{phase: float64(i) / float64(cfg.Conns)}
		if sc.hot {
			p.group = groupOthers
		}
		p.orders, p.rate = split(cfg, othersShare, i, cfg.Conns)
		if sc.uncorr {
			p.accounts = []int64{-1}
		} else {
			for a := first + int64(i); a < first+int64(cfg.Accounts); a += int64(cfg.Conns) {
				p.accounts = append(p.accounts, a)
			}
		}
		if len(p.accounts) > 0 {
			plans = append(plans, p)
		}
	}
	return plans
}

// split returns the order count and rate of connection i of n sharing
// share of the load. Remainders go to the first connections, so counts
// add up exactly.
func split(cfg *Config, share float64, i, n int) (orders int, rate float64) {
	rate = cfg.Rate * share / float64(n)
	total := cfg.Orders
	if cfg.Duration > 0 {
		if cfg.Rate == 0 {
			return -1, 0
		}
		total = int(cfg.Rate * cfg.Duration.Seconds())
	}
	part := int(float64(total) * share)
	orders = part / n
	if i < part%n {
		orders++
	}
	return orders, rate
}

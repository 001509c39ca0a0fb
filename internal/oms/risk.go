package oms

import (
	"fmt"
	"math/bits"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// Defaults for RiskConfig fields left at zero.
const (
	// DefaultMaxQuantity is the largest quantity of one order.
	DefaultMaxQuantity = 10_000
	// DefaultMaxNotional is the largest quantity × price of one order, in
	// cents ($1,000,000).
	DefaultMaxNotional = 100_000_000
	// DefaultPriceBandBps is how far a price may stray from the symbol's
	// reference price, in basis points of the reference (5 %).
	DefaultPriceBandBps = 500
	// DefaultHaltedSymbol is halted unless RiskConfig.Halted says
	// otherwise, so the demo can show RISK_SYMBOL_HALTED out of the box.
	DefaultHaltedSymbol = "ZZZZ"
)

// DefaultSymbols returns the reference data used when RiskConfig.Symbols
// is nil: symbol → reference price in cents.
func DefaultSymbols() map[string]int64 {
	return map[string]int64{
		"ACME": 10_000, "BOLT": 2_500, "CRNK": 420, "DYNO": 15_000,
		"ECHO": 7_500, "FLUX": 32_000, "GRID": 1_200, "ZZZZ": 5_000,
	}
}

// RiskConfig holds the limits of the risk stage.
type RiskConfig struct {
	// MaxQuantity is the largest quantity of one order. Default
	// DefaultMaxQuantity.
	MaxQuantity int64
	// MaxNotional is the largest quantity × price of one order, in cents.
	// Default DefaultMaxNotional.
	MaxNotional int64
	// PriceBandBps is how far a price may be from the reference price, in
	// basis points (1/100 of a percent) of it. Default
	// DefaultPriceBandBps.
	PriceBandBps int64
	// Symbols maps each tradable symbol to its reference price in cents.
	// Orders for other symbols are rejected UNKNOWN_SYMBOL. Default
	// DefaultSymbols().
	Symbols map[string]int64
	// Halted lists symbols that take no orders. nil means
	// {DefaultHaltedSymbol}; an empty, non-nil slice halts nothing.
	Halted []string
}

func (r *RiskConfig) setDefaults() {
	if r.MaxQuantity == 0 {
		r.MaxQuantity = DefaultMaxQuantity
	}
	if r.MaxNotional == 0 {
		r.MaxNotional = DefaultMaxNotional
	}
	if r.PriceBandBps == 0 {
		r.PriceBandBps = DefaultPriceBandBps
	}
	if r.Symbols == nil {
		r.Symbols = DefaultSymbols()
	}
	if r.Halted == nil {
		r.Halted = []string{DefaultHaltedSymbol}
	}
}

func (r *RiskConfig) validate() error {
	if r.MaxQuantity < 1 || r.MaxNotional < 1 || r.PriceBandBps < 1 {
		return fmt.Errorf("oms: risk limits must be positive")
	}
	for sym, ref := range r.Symbols {
		if sym == "" || ref < 1 {
			return fmt.Errorf("oms: symbol %q needs a name and a positive reference price, got %d", sym, ref)
		}
	}
	for _, sym := range r.Halted {
		if _, ok := r.Symbols[sym]; !ok {
			return fmt.Errorf("oms: halted symbol %q is not in the symbol table", sym)
		}
	}
	return nil
}

// risk is stage 2. It is read-only after construction, so workers share
// it without locks.
type risk struct {
	maxQty, maxNotional, bandBps int64
	symbols                      map[string]riskSymbol
}

type riskSymbol struct {
	ref    int64
	halted bool
}

func newRisk(c RiskConfig) *risk {
	r := &risk{
		maxQty:      c.MaxQuantity,
		maxNotional: c.MaxNotional,
		bandBps:     c.PriceBandBps,
		symbols:     make(map[string]riskSymbol, len(c.Symbols)),
	}
	for sym, ref := range c.Symbols {
		r.symbols[sym] = riskSymbol{ref: ref}
	}
	for _, sym := range c.Halted {
		s := r.symbols[sym]
		s.halted = true
		r.symbols[sym] = s
	}
	return r
}

// check runs the risk rules in a fixed order (the order of the Reason
// enum), so an order that breaks several rules always gets the same
// reason. It expects an order that passed validation: positive quantity
// and price.
func (r *risk) check(o *order) (omsv1.Reason, string) {
	sym, ok := r.symbols[o.symbol]
	switch {
	case !ok:
		return omsv1.Reason_REASON_UNKNOWN_SYMBOL, "unknown symbol " + o.symbol
	case sym.halted:
		return omsv1.Reason_REASON_RISK_SYMBOL_HALTED, o.symbol + " is halted"
	case o.quantity > r.maxQty:
		return omsv1.Reason_REASON_RISK_QTY_LIMIT, fmt.Sprintf("quantity %d over limit %d", o.quantity, r.maxQty)
	case outsideBand(o.price, sym.ref, r.bandBps):
		return omsv1.Reason_REASON_RISK_PRICE_BAND, fmt.Sprintf("price %d more than %d bps from reference %d", o.price, r.bandBps, sym.ref)
	case productOver(o.quantity, o.price, r.maxNotional):
		return omsv1.Reason_REASON_RISK_NOTIONAL_LIMIT, fmt.Sprintf("notional %d × %d over limit %d", o.quantity, o.price, r.maxNotional)
	}
	return omsv1.Reason_REASON_UNSPECIFIED, ""
}

// outsideBand reports |price-ref| / ref > bps / 10000 for positive price
// and ref, in integers that cannot overflow.
func outsideBand(price, ref, bps int64) bool {
	diff := uint64(price - ref)
	if price < ref {
		diff = uint64(ref - price)
	}
	return productOver128(diff, 10_000, uint64(ref), uint64(bps))
}

// productOver reports a*b > limit for positive a, b and limit.
func productOver(a, b, limit int64) bool {
	return productOver128(uint64(a), uint64(b), uint64(limit), 1)
}

// productOver128 reports a*b > c*d using 128-bit products.
func productOver128(a, b, c, d uint64) bool {
	hi1, lo1 := bits.Mul64(a, b)
	hi2, lo2 := bits.Mul64(c, d)
	return hi1 > hi2 || (hi1 == hi2 && lo1 > lo2)
}

// EffectiveRisk returns r with its defaults filled in: the limits a
// server configured with r enforces. Load generators use it to build
// orders that fail on purpose.
func EffectiveRisk(r RiskConfig) RiskConfig {
	r.setDefaults()
	return r
}

package omsload

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/internal/oms"
)

// kind is what an order is built to be, and so which answer it expects.
type kind uint8

const (
	kindValid kind = iota
	kindMissingSymbol
	kindBadSide
	kindZeroQty
	kindBadPrice
	kindUndecodable
	kindUnknownSymbol
	kindHalted
	kindQtyLimit
	kindPriceBand
	kindNotional
	numKinds
)

// expected is the reason a server with the configured risk settings gives
// each kind; UNSPECIFIED means ACK.
var expected = [numKinds]omsv1.Reason{
	kindValid:         omsv1.Reason_REASON_UNSPECIFIED,
	kindMissingSymbol: omsv1.Reason_REASON_BAD_MSG,
	kindBadSide:       omsv1.Reason_REASON_BAD_MSG,
	kindZeroQty:       omsv1.Reason_REASON_BAD_MSG,
	kindBadPrice:      omsv1.Reason_REASON_BAD_MSG,
	kindUndecodable:   omsv1.Reason_REASON_BAD_MSG,
	kindUnknownSymbol: omsv1.Reason_REASON_UNKNOWN_SYMBOL,
	kindHalted:        omsv1.Reason_REASON_RISK_SYMBOL_HALTED,
	kindQtyLimit:      omsv1.Reason_REASON_RISK_QTY_LIMIT,
	kindPriceBand:     omsv1.Reason_REASON_RISK_PRICE_BAND,
	kindNotional:      omsv1.Reason_REASON_RISK_NOTIONAL_LIMIT,
}

// builder makes orders of every kind against one set of risk settings.
// It is read-only once made; each stream brings its own random source.
type builder struct {
	risk     oms.RiskConfig
	tradable []string // symbols valid orders may use, sorted
	halted   string   // "" if none
	unknown  string   // a symbol not in the table
	big      string   // the symbol that breaks the notional limit soonest
	bigQty   int64    // a quantity within limits whose notional at big's reference is over the limit
}

func newBuilder(r oms.RiskConfig, mix []weighted) (*builder, error) {
	b := &builder{risk: r, unknown: "NOPE"}
	halted := map[string]bool{}
	for _, s := range r.Halted {
		halted[s] = true
	}
	for sym, ref := range r.Symbols {
		switch {
		case halted[sym]:
			if b.halted == "" || sym < b.halted {
				b.halted = sym
			}
		case bandTop(ref, r.PriceBandBps) <= r.MaxNotional: // one share at any price in the band fits
			b.tradable = append(b.tradable, sym)
		}
		if !halted[sym] && ref > r.Symbols[b.big] {
			b.big = sym
		}
	}
	slices.Sort(b.tradable)
	for r.Symbols[b.unknown] != 0 {
		b.unknown += "X"
	}
	if b.big != "" {
		b.bigQty = r.MaxNotional/r.Symbols[b.big] + 1
	}
	return b, b.check(mix)
}

// check reports a kind the mix needs but the settings make impossible.
func (b *builder) check(mix []weighted) error {
	for _, w := range mix {
		switch {
		case len(b.tradable) == 0:
			return fmt.Errorf("%w: no symbol can trade within the limits", ErrRiskConfig)
		case w.kind == kindHalted && b.halted == "":
			return fmt.Errorf("%w: no halted symbol", ErrRiskConfig)
		case w.kind == kindNotional && b.bigQty > b.risk.MaxQuantity:
			return fmt.Errorf("%w: no tradable order within the quantity limit breaks the notional limit", ErrRiskConfig)
		}
	}
	return nil
}

// bandTop is the highest price inside the band around ref.
func bandTop(ref, bps int64) int64 { return ref + ref*bps/10_000 }

// fill sets m's order fields (not the header) for an order of kind k.
func (b *builder) fill(m *omsv1.Order, k kind, rng *rand.Rand) {
	sym := b.tradable[rng.IntN(len(b.tradable))]
	ref := b.risk.Symbols[sym]
	m.Symbol, m.Side = sym, omsv1.Side(1+rng.IntN(2))
	// A price inside half the band, and a quantity whose notional fits.
	m.Price = max(1, ref+ref*(rng.Int64N(b.risk.PriceBandBps+1)-b.risk.PriceBandBps/2)/10_000)
	m.Quantity = 1 + rng.Int64N(min(100, b.risk.MaxQuantity, b.risk.MaxNotional/m.Price))
	switch k {
	case kindMissingSymbol:
		m.Symbol = ""
	case kindBadSide:
		m.Side = omsv1.Side_SIDE_UNSPECIFIED
	case kindZeroQty:
		m.Quantity = 0
	case kindBadPrice:
		m.Price = -m.Price
	case kindUnknownSymbol:
		m.Symbol = b.unknown
	case kindHalted:
		m.Symbol, m.Price = b.halted, b.risk.Symbols[b.halted]
		m.Quantity = 1
	case kindQtyLimit:
		m.Quantity = b.risk.MaxQuantity + 1 + rng.Int64N(100)
	case kindPriceBand:
		m.Price = ref + ref*2*b.risk.PriceBandBps/10_000 + 1
		m.Quantity = 1
	case kindNotional:
		m.Symbol, m.Price, m.Quantity = b.big, b.risk.Symbols[b.big], b.bigQty
	}
}

// writeOrder writes m as one frame. An undecodable order is the header
// fields, which the server recovers to route and answer it, followed by a
// field with an invalid wire type.
func writeOrder(w io.Writer, m *omsv1.Order, k kind) error {
	if k != kindUndecodable {
		_, err := protodelim.MarshalTo(w, m)
		return err
	}
	var body []byte
	body = protowire.AppendTag(body, 1, protowire.VarintType)
	body = protowire.AppendVarint(body, uint64(m.CorrelationId))
	body = protowire.AppendTag(body, 2, protowire.VarintType)
	body = protowire.AppendVarint(body, m.SeqInFamily)
	body = protowire.AppendTag(body, 3, protowire.VarintType)
	body = protowire.AppendVarint(body, m.ClientOrderId)
	body = append(body, 0x27, 0xff, 0xff) // field 4, wire type 7: invalid
	_, err := w.Write(append(protowire.AppendVarint(nil, uint64(len(body))), body...))
	return err
}

// pickKind draws a kind from mix.
func pickKind(mix []weighted, rng *rand.Rand) kind {
	if len(mix) == 1 {
		return mix[0].kind
	}
	n := rng.IntN(100)
	for _, w := range mix {
		if n < w.percent {
			return w.kind
		}
		n -= w.percent
	}
	return kindValid
}

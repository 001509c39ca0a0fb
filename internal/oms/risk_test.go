package oms

import (
	"math"
	"testing"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"pgregory.net/rapid"
)

func TestRiskLimitsConfigurable(t *testing.T) {
	t.Parallel()
	r := newRisk(EffectiveRisk(RiskConfig{
		MaxQuantity: 100, MaxNotional: 50_000, PriceBandBps: 100,
		Symbols: map[string]int64{"AAA": 1_000, "BBB": 200}, Halted: []string{},
	}))
	tests := []struct {
		sym        string
		qty, price int64
		want       omsv1.Reason
	}{
		{"AAA", 50, 1_000, omsv1.Reason_REASON_UNSPECIFIED},
		{"AAA", 101, 1_000, omsv1.Reason_REASON_RISK_QTY_LIMIT},
		{"AAA", 50, 1_011, omsv1.Reason_REASON_RISK_PRICE_BAND},
		{"AAA", 49, 1_010, omsv1.Reason_REASON_UNSPECIFIED},
		{"AAA", 49, 990, omsv1.Reason_REASON_UNSPECIFIED},
		{"AAA", 49, 989, omsv1.Reason_REASON_RISK_PRICE_BAND},
		{"AAA", 51, 1_000, omsv1.Reason_REASON_RISK_NOTIONAL_LIMIT},
		{"BBB", 100, 200, omsv1.Reason_REASON_UNSPECIFIED}, // nothing halted
		{"ZZZZ", 1, 5_000, omsv1.Reason_REASON_UNKNOWN_SYMBOL},
	}
	for _, tt := range tests {
		o := &order{symbol: tt.sym, quantity: tt.qty, price: tt.price}
		if got, detail := r.check(o); got != tt.want {
			t.Errorf("%s %d @ %d: %v (%s), want %v", tt.sym, tt.qty, tt.price, got, detail, tt.want)
		}
	}
}

// The 128-bit comparisons agree with exact arithmetic wherever int64
// arithmetic cannot overflow, and never overflow themselves.
func TestRiskArithmetic(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.Int64Range(1, math.MaxInt32).Draw(t, "a")
		b := rapid.Int64Range(1, math.MaxInt32).Draw(t, "b")
		limit := rapid.Int64Range(1, math.MaxInt64).Draw(t, "limit")
		if got, want := productOver(a, b, limit), a*b > limit; got != want {
			t.Fatalf("productOver(%d, %d, %d) = %v", a, b, limit, got)
		}
		price := rapid.Int64Range(1, math.MaxInt32).Draw(t, "price")
		ref := rapid.Int64Range(1, math.MaxInt32).Draw(t, "ref")
		bps := rapid.Int64Range(1, 20_000).Draw(t, "bps")
		diff := price - ref
		if diff < 0 {
			diff = -diff
		}
		if got, want := outsideBand(price, ref, bps), diff*10_000 > ref*bps; got != want {
			t.Fatalf("outsideBand(%d, %d, %d) = %v", price, ref, bps, got)
		}
	})
	if !productOver(math.MaxInt64, math.MaxInt64, math.MaxInt64) || productOver(1, math.MaxInt64, math.MaxInt64) {
		t.Fatal("productOver wrong at the int64 edge")
	}
	if !outsideBand(math.MaxInt64, 1, 10_000) {
		t.Fatal("outsideBand wrong at the int64 edge")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{ExecMin: 2, ExecMax: 1},
		{ExecMin: -1},
		{MaxPending: -1},
		{MaxFrame: -1},
		{OutboxLimit: -5},
		{StatsInterval: -1},
		{Risk: RiskConfig{MaxQuantity: -1}},
		{Risk: RiskConfig{Symbols: map[string]int64{"A": 0}}},
		{Risk: RiskConfig{Symbols: map[string]int64{"A": 1}, Halted: []string{"B"}}},
	}
	for i, cfg := range bad {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("config %d (%+v) accepted", i, cfg)
		}
	}
	srv, err := New(Config{}, nil)
	if err != nil {
		t.Fatalf("zero config rejected: %v", err)
	}
	if c := srv.cfg; c.Listen != DefaultListen || c.MaxFrame != DefaultMaxFrame || c.Risk.MaxQuantity != DefaultMaxQuantity ||
		len(c.Risk.Halted) != 1 || c.ExecMax != 0 || c.StatsInterval != 0 {
		t.Errorf("defaults not applied as documented: %+v", c)
	}
}

func TestExecDelay(t *testing.T) {
	t.Parallel()
	const lo, hi = 10_000_000, 20_000_000
	seen := map[int64]bool{}
	for i := range uint64(1000) {
		o := &order{correlationID: int64(i % 7), seq: i, clientOrderID: i * 31}
		d := execDelay(o, 1, lo, hi)
		if d < lo || d > hi {
			t.Fatalf("delay %v outside [%v, %v]", d, lo, hi)
		}
		if again := execDelay(o, 1, lo, hi); again != d {
			t.Fatalf("same order, same seed: %v then %v", d, again)
		}
		seen[int64(d)/1_000_000] = true
	}
	if len(seen) < 10 {
		t.Fatalf("delays cover only %d of 11 milliseconds", len(seen))
	}
	o := &order{clientOrderID: 5}
	if execDelay(o, 1, lo, hi) == execDelay(o, 2, lo, hi) && execDelay(o, 3, lo, hi) == execDelay(o, 4, lo, hi) {
		t.Fatal("the seed does not change delays")
	}
	if d := execDelay(o, 1, 0, 0); d != 0 {
		t.Fatalf("zero range gave %v", d)
	}
}

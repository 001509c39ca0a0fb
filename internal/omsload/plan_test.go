package omsload

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Every account belongs to exactly one connection, and the connections'
// counts and rates add up to the whole.
func TestPlanSplitsExactly(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			Addr:     "x:1",
			Scenario: rapid.SampledFrom(Scenarios()).Draw(t, "scenario"),
			Conns:    rapid.IntRange(1, 8).Draw(t, "conns"),
			Orders:   rapid.IntRange(1, 100_000).Draw(t, "orders"),
			Rate:     float64(rapid.IntRange(0, 100_000).Draw(t, "rate")),
			HotShare: rapid.Float64Range(0.05, 0.95).Draw(t, "hot"),
		}
		cfg.Accounts = rapid.IntRange(cfg.Conns, 5000).Draw(t, "accounts")
		cfg.setDefaults()
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		plans := plan(&cfg)
		owner := map[int64]int{}
		orders, rate := 0, 0.0
		for i, p := range plans {
			orders += p.orders
			rate += p.rate
			for _, a := range p.accounts {
				if prev, ok := owner[a]; ok && a > 0 {
					t.Fatalf("account %d on connections %d and %d", a, prev, i)
				}
				owner[a] = i
			}
		}
		sc := scenarios[cfg.Scenario]
		wantOrders := cfg.Orders
		if sc.hot {
			// Each side is rounded down separately.
			wantOrders = int(float64(cfg.Orders)*cfg.HotShare) + int(float64(cfg.Orders)*(1-cfg.HotShare))
		}
		if orders != wantOrders {
			t.Fatalf("plans carry %d orders, want %d", orders, wantOrders)
		}
		if d := rate - cfg.Rate; d > 1e-6*cfg.Rate+1e-9 || d < -1e-6*cfg.Rate-1e-9 {
			t.Fatalf("plans carry %v orders/s, want %v", rate, cfg.Rate)
		}
		if !sc.uncorr && len(owner) != cfg.Accounts+boolInt(sc.hot) {
			t.Fatalf("%d accounts planned, want %d", len(owner), cfg.Accounts)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Without the hot account, the other accounts' connections send exactly
// what they send beside it.
func TestNoHotKeepsOthersUnchanged(t *testing.T) {
	t.Parallel()
	cfg := Config{Addr: "x:1", Scenario: "hot-family", Rate: 10_000, Duration: time.Second}
	cfg.setDefaults()
	with := plan(&cfg)
	cfg.NoHot = true
	without := plan(&cfg)
	if len(with) != len(without)+1 || with[0].group != groupHot {
		t.Fatalf("with: %d plans, without: %d", len(with), len(without))
	}
	for i, p := range without {
		q := with[i+1]
		if p.orders != q.orders || p.rate != q.rate || len(p.accounts) != len(q.accounts) || p.group != groupOthers {
			t.Fatalf("connection %d differs: %+v vs %+v", i, p, q)
		}
	}
}

func TestConfigRejects(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{Scenario: "many-families"},                                        // no address
		{Addr: "x:1", Scenario: "nope"},                                    // unknown scenario
		{Addr: "x:1", Scenario: "mixed", Orders: 5, Duration: time.Second}, // both
		{Addr: "x:1", Scenario: "mixed", Accounts: 2, Conns: 3},            // idle connection
		{Addr: "x:1", Scenario: "hot-family", HotShare: 1.5},
		{Addr: "x:1", Scenario: "mixed", Rate: -1},
	}
	for i, cfg := range bad {
		if _, err := Run(t.Context(), cfg); err == nil {
			t.Errorf("config %d (%+v) accepted", i, cfg)
		}
	}
}

func TestRecordsGrowInPlace(t *testing.T) {
	t.Parallel()
	r := newRecords(chunkSize*2 + 1)
	if r.capacity() != chunkSize*3 {
		t.Fatalf("capacity %d", r.capacity())
	}
	first := r.chunks
	for i := range r.capacity() {
		r.put(i, record{seq: uint64(i)})
	}
	for i := range r.capacity() {
		if r.get(i).seq != uint64(i) {
			t.Fatalf("record %d holds %d", i, r.get(i).seq)
		}
	}
	if &first[0] != &r.chunks[0] {
		t.Fatal("the chunk table moved")
	}
	if newRecords(-1).capacity() != maxStreamOrders {
		t.Fatal("an open-ended stream has the wrong bound")
	}
}

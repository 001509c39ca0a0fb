package omsload

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/internal/oms"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 20 * time.Second

func startServer(t *testing.T, cfg oms.Config) *oms.Server {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.CloseLinger == 0 {
		cfg.CloseLinger = 100 * time.Millisecond
	}
	srv, err := oms.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	cfg.DrainTimeout = waitLimit
	r, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

// checkClean asserts a run met every promise: one answer per order, in
// order per account, each the expected one.
func checkClean(t *testing.T, r *Report) {
	t.Helper()
	if r.Violations() != 0 || r.ConnErrors != 0 || r.Responses != r.Sent || r.Acks+r.Rejects != r.Responses {
		t.Fatalf("run not clean: %+v", r)
	}
}

// Every scenario at small scale against a real server, with a short
// asynchronous execution so accounts really are busy.
func TestScenarios(t *testing.T) {
	t.Parallel()
	srv := startServer(t, oms.Config{Partitions: 2, ExecMin: 0, ExecMax: time.Millisecond})
	addr := srv.Addr().String()
	for _, name := range Scenarios() {
		t.Run(name, func(t *testing.T) {
			r := run(t, Config{Addr: addr, Scenario: name, Orders: 3000, Accounts: 300, Conns: 3, Window: 256})
			checkClean(t, r)
			if r.Sent != 3000 || r.Busy != 0 {
				t.Fatalf("sent %d with %d BUSY, want 3000 and none", r.Sent, r.Busy)
			}
			if len(r.Partitions) != 2 {
				t.Errorf("answers came from partitions %v, want both", r.Partitions)
			}
			if r.Latency.Count != int64(r.Responses) || r.P50us <= 0 || r.MaxUs < r.P999us || r.P999us < r.P99us || r.P99us < r.P50us {
				t.Errorf("latency summary inconsistent: %+v", r.Latency)
			}
			switch name {
			case "mixed":
				for _, reason := range []string{"BAD_MSG", "UNKNOWN_SYMBOL", "RISK_SYMBOL_HALTED", "RISK_QTY_LIMIT", "RISK_PRICE_BAND", "RISK_NOTIONAL_LIMIT"} {
					if r.RejectsByReason[reason] == 0 {
						t.Errorf("no %s among %v", reason, r.RejectsByReason)
					}
				}
				// 70 % valid, within a wide margin.
				if r.Acks < 1800 || r.Acks > 2400 {
					t.Errorf("%d ACKs of 3000, want about 2100", r.Acks)
				}
			case "hot-family":
				if r.Groups[groupHot].Count != 1500 || r.Groups[groupOthers].Count != 1500 || r.Conns != 4 {
					t.Errorf("hot-family split %+v over %d connections, want 1500 each over 4", r.Groups, r.Conns)
				}
			default:
				if r.Acks != r.Sent {
					t.Errorf("%d ACKs of %d valid orders", r.Acks, r.Sent)
				}
			}
		})
	}
}

// The mixed scenario builds its failing orders from the server's limits,
// whatever they are.
func TestMixedWithCustomRisk(t *testing.T) {
	t.Parallel()
	risk := oms.RiskConfig{
		MaxQuantity: 500, MaxNotional: 2_000_000, PriceBandBps: 50,
		Symbols: map[string]int64{"AAA": 3_000, "BBB": 150, "CCC": 9_000}, Halted: []string{"BBB"},
	}
	srv := startServer(t, oms.Config{ExecMax: 0, Risk: risk})
	r := run(t, Config{Addr: srv.Addr().String(), Scenario: "mixed", Orders: 2000, Conns: 2, Risk: risk})
	checkClean(t, r)
	if len(r.RejectsByReason) != 6 {
		t.Fatalf("rejects %v, want all six pipeline reasons", r.RejectsByReason)
	}
	if _, err := Run(t.Context(), Config{Addr: "127.0.0.1:1", Scenario: "mixed",
		Risk: oms.RiskConfig{Symbols: map[string]int64{"A": 10}, Halted: []string{}}}); err == nil {
		t.Fatal("mixed ran with no halted symbol to test")
	}
}

// For any workable risk settings, every order mixed builds gets the
// answer it was built for.
func TestMixedAgreesWithServer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	ran := 0
	for i := range 8 {
		risk := oms.RiskConfig{
			MaxQuantity:  1 + rng.Int64N(10_000),
			PriceBandBps: 1 + rng.Int64N(3_000),
			Symbols:      map[string]int64{},
			Halted:       []string{"H"},
		}
		for _, sym := range []string{"A", "B", "C", "H"} {
			risk.Symbols[sym] = 1 + rng.Int64N(100_000)
		}
		maxRef := slices.Max(slices.Collect(maps.Values(risk.Symbols)))
		risk.MaxNotional = maxRef*3 + rng.Int64N(maxRef*risk.MaxQuantity)
		if _, err := newBuilder(oms.EffectiveRisk(risk), mixed); err != nil {
			continue // e.g. no order within the quantity limit can break the notional one
		}
		srv := startServer(t, oms.Config{ExecMax: 0, Risk: risk})
		r := run(t, Config{Addr: srv.Addr().String(), Scenario: "mixed", Orders: 500, Accounts: 50, Conns: 1, Seed: uint64(i + 1), Risk: risk})
		if r.WrongDecisions != 0 {
			t.Fatalf("risk %+v: %d wrong decisions: %v", risk, r.WrongDecisions, r.RejectsByReason)
		}
		checkClean(t, r)
		ran++
	}
	if ran < 4 {
		t.Fatalf("only %d of 8 drawn settings were workable", ran)
	}
}

// Open loop: orders leave on schedule, and latency counts from it.
func TestOpenLoop(t *testing.T) {
	t.Parallel()
	srv := startServer(t, oms.Config{ExecMax: 0})
	start := time.Now()
	r := run(t, Config{Addr: srv.Addr().String(), Scenario: "many-families", Rate: 4000, Duration: 250 * time.Millisecond, Conns: 2})
	checkClean(t, r)
	if r.Mode != "open-loop" || r.Sent != 1000 {
		t.Fatalf("mode %s sent %d, want open-loop and 1000", r.Mode, r.Sent)
	}
	if elapsed := time.Since(start); elapsed < 240*time.Millisecond {
		t.Fatalf("1000 orders at 4000/s took only %v", elapsed)
	}
	if r.P50us < r.Service.P50us {
		t.Errorf("latency from schedule (%v) below latency from send (%v)", r.P50us, r.Service.P50us)
	}
}

// A tiny ring: the hot account's backlog fills its partition, orders are
// refused BUSY at once, every other order is still answered in order,
// and the server then serves a clean run.
func TestTinyRing(t *testing.T) {
	t.Parallel()
	srv := startServer(t, oms.Config{Partitions: 1, RingSize: 2, MaxQueued: 8, ExecMin: time.Millisecond, ExecMax: time.Millisecond})
	addr := srv.Addr().String()
	r := run(t, Config{Addr: addr, Scenario: "hot-family", Orders: 4000, Accounts: 100, Conns: 2, Window: 512})
	if r.Busy == 0 {
		t.Fatalf("no BUSY answers with a ring of 2: %+v", r)
	}
	checkClean(t, r)
	if st := srv.Stats(); st.Rejects[omsv1.Reason_REASON_BUSY] != r.Busy {
		t.Errorf("server counted %d BUSY, client %d", st.Rejects[omsv1.Reason_REASON_BUSY], r.Busy)
	}
	r = run(t, Config{Addr: addr, Scenario: "many-families", Orders: 200, Accounts: 200, Conns: 2, Window: 4})
	checkClean(t, r)
}

// Stopping the server under load: every order it read is answered, and
// every answer reaches the generator, which stops when its connections
// close.
func TestServerStopUnderLoad(t *testing.T) {
	t.Parallel()
	srv, err := oms.New(oms.Config{Listen: "127.0.0.1:0", ExecMax: 2 * time.Millisecond, CloseLinger: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Report, 1)
	go func() {
		r, err := Run(context.Background(), Config{Addr: srv.Addr().String(), Scenario: "mixed", Rate: 20_000, Duration: time.Minute, DrainTimeout: waitLimit})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for srv.Stats().Received < 2000 {
		<-tick.C
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	var r *Report
	select {
	case r = <-done:
	case <-time.After(waitLimit):
		t.Fatal("the generator did not stop after the server closed")
	}
	st := srv.Stats()
	if st.Received != st.Answered || st.Dropped != 0 || r.Responses != st.Answered {
		t.Fatalf("server read %d, answered %d, dropped %d; generator got %d", st.Received, st.Answered, st.Dropped, r.Responses)
	}
	if r.FIFOViolations+r.DuplicateResponses+r.UnknownResponses+r.WrongDecisions != 0 {
		t.Fatalf("violations during shutdown: %+v", r)
	}
	if r.MissingResponses != r.Sent-r.Responses {
		t.Fatalf("missing %d, sent %d, responses %d", r.MissingResponses, r.Sent, r.Responses)
	}
}

package oms

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/dispatch"
)

const (
	ack       = omsv1.Reason_REASON_UNSPECIFIED
	badMsg    = omsv1.Reason_REASON_BAD_MSG
	busy      = omsv1.Reason_REASON_BUSY
	groupFull = omsv1.Reason_REASON_GROUP_FULL
	shutdown  = omsv1.Reason_REASON_SHUTTING_DOWN
)

// Every stage-1 and stage-2 outcome, over a real socket, with the fields
// the response must echo.
func TestStagesOverSocket(t *testing.T) {
	t.Parallel()
	srv := start(t, Config{})
	c := dial(t, srv)
	tests := []struct {
		name   string
		mutate func(o *omsv1.Order)
		want   omsv1.Reason
	}{
		{"valid buy", func(o *omsv1.Order) {}, ack},
		{"valid sell at band edge", func(o *omsv1.Order) { o.Side, o.Price = omsv1.Side_SIDE_SELL, 10_500 }, ack},
		{"missing symbol", func(o *omsv1.Order) { o.Symbol = "" }, badMsg},
		{"unspecified side", func(o *omsv1.Order) { o.Side = omsv1.Side_SIDE_UNSPECIFIED }, badMsg},
		{"unknown side", func(o *omsv1.Order) { o.Side = 7 }, badMsg},
		{"zero quantity", func(o *omsv1.Order) { o.Quantity = 0 }, badMsg},
		{"negative quantity", func(o *omsv1.Order) { o.Quantity = -3 }, badMsg},
		{"zero price", func(o *omsv1.Order) { o.Price = 0 }, badMsg},
		{"bad message before risk", func(o *omsv1.Order) { o.Symbol, o.Quantity = "ZZZZ", 0 }, badMsg},
		{"unknown symbol", func(o *omsv1.Order) { o.Symbol = "NOPE" }, omsv1.Reason_REASON_UNKNOWN_SYMBOL},
		{"halted", func(o *omsv1.Order) { o.Symbol, o.Price = "ZZZZ", 5_000 }, omsv1.Reason_REASON_RISK_SYMBOL_HALTED},
		{"halted before quantity", func(o *omsv1.Order) { o.Symbol, o.Quantity = "ZZZZ", 1e9 }, omsv1.Reason_REASON_RISK_SYMBOL_HALTED},
		{"quantity", func(o *omsv1.Order) { o.Quantity = DefaultMaxQuantity + 1 }, omsv1.Reason_REASON_RISK_QTY_LIMIT},
		{"quantity before band", func(o *omsv1.Order) { o.Quantity, o.Price = DefaultMaxQuantity+1, 1 }, omsv1.Reason_REASON_RISK_QTY_LIMIT},
		{"band above", func(o *omsv1.Order) { o.Price = 10_501 }, omsv1.Reason_REASON_RISK_PRICE_BAND},
		{"band below", func(o *omsv1.Order) { o.Price = 9_499 }, omsv1.Reason_REASON_RISK_PRICE_BAND},
		{"band before notional", func(o *omsv1.Order) { o.Quantity, o.Price = DefaultMaxQuantity, 20_000 }, omsv1.Reason_REASON_RISK_PRICE_BAND},
		{"notional", func(o *omsv1.Order) { o.Quantity, o.Price = DefaultMaxQuantity, 10_100 }, omsv1.Reason_REASON_RISK_NOTIONAL_LIMIT},
		{"notional at limit", func(o *omsv1.Order) { o.Quantity = DefaultMaxNotional / 10_000 }, ack},
	}
	for i, tt := range tests {
		o := valid(int64(i+1), 1)
		tt.mutate(o)
		c.send(o)
		r := c.recv()
		if r.GetReason() != tt.want {
			t.Errorf("%s: reason %v (%q), want %v", tt.name, r.GetReason(), r.GetDetail(), tt.want)
		}
		wantDecision := omsv1.Decision_DECISION_REJ
		if tt.want == ack {
			wantDecision = omsv1.Decision_DECISION_ACK
		}
		if r.GetDecision() != wantDecision || (tt.want == ack) != (r.GetDetail() == "") {
			t.Errorf("%s: decision %v detail %q", tt.name, r.GetDecision(), r.GetDetail())
		}
		checkEcho(t, tt.name, srv, o, r)
	}
}

// checkEcho checks what a pipeline response must carry over from its order.
func checkEcho(t *testing.T, name string, srv *Server, o *omsv1.Order, r *omsv1.Response) {
	t.Helper()
	if r.GetCorrelationId() != o.GetCorrelationId() || r.GetSeqInFamily() != o.GetSeqInFamily() ||
		r.GetClientOrderId() != o.GetClientOrderId() || r.GetClientTsNs() != o.GetClientTsNs() {
		t.Errorf("%s: response %v does not echo order %v", name, r, o)
	}
	if want := srv.eng.PartitionOf(dispatch.IntKey(o.GetCorrelationId())); want >= 0 && int(r.GetPartition()) != want {
		t.Errorf("%s: partition %d, want %d", name, r.GetPartition(), want)
	}
	if !(0 < r.GetReceivedNs() && r.GetReceivedNs() <= r.GetDispatchedNs() && r.GetDispatchedNs() <= r.GetDoneNs()) {
		t.Errorf("%s: timings received %d dispatched %d done %d out of order", name, r.GetReceivedNs(), r.GetDispatchedNs(), r.GetDoneNs())
	}
}

// An order whose body does not decode is answered BAD_MSG by the
// pipeline, routed by the header it still carries; the connection lives
// on.
func TestUndecodableOrder(t *testing.T) {
	t.Parallel()
	srv := start(t, Config{Partitions: 4})
	c := dial(t, srv)

	var body []byte
	body = protowire.AppendTag(body, 1, protowire.VarintType)
	body = protowire.AppendVarint(body, 77)
	body = protowire.AppendTag(body, 2, protowire.VarintType)
	body = protowire.AppendVarint(body, 5)
	body = protowire.AppendTag(body, 3, protowire.VarintType)
	body = protowire.AppendVarint(body, 9001)
	body = append(body, 0x22, 0x7f) // symbol: length 127, but the body ends
	c.sendRaw(append(protowire.AppendVarint(nil, uint64(len(body))), body...))
	r := c.recv()
	if r.GetReason() != badMsg || r.GetCorrelationId() != 77 || r.GetSeqInFamily() != 5 || r.GetClientOrderId() != 9001 {
		t.Fatalf("damaged order answered %v, want BAD_MSG for 77/5/9001", r)
	}
	if want := srv.eng.PartitionOf(dispatch.IntKey(77)); int(r.GetPartition()) != want {
		t.Errorf("partition %d, want %d: the damaged order must be routed by its id", r.GetPartition(), want)
	}

	// Nothing to salvage: uncorrelated BAD_MSG.
	c.sendRaw([]byte{3, 0xff, 0xff, 0xff})
	if r := c.recv(); r.GetReason() != badMsg || r.GetCorrelationId() != 0 || r.GetPartition() < 0 {
		t.Fatalf("garbage answered %v, want BAD_MSG, correlation 0, a partition", r)
	}
	// An empty frame is an order with nothing set.
	c.sendRaw([]byte{0})
	if r := c.recv(); r.GetReason() != badMsg {
		t.Fatalf("empty frame answered %v, want BAD_MSG", r)
	}

	c.send(valid(77, 6))
	if r := c.recv(); r.GetReason() != ack {
		t.Fatalf("after bad orders, valid order answered %v", r)
	}
	if got := srv.Stats().BrokenFrames; got != 0 {
		t.Errorf("BrokenFrames = %d, want 0", got)
	}
}

// A broken frame ends the connection, but only after every order read
// before it has been answered.
func TestBrokenFrameClosesAfterAnswering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tail []byte
		half bool // half-close after the tail, so a partial frame ends the stream
	}{
		{"length over max", protowire.AppendVarint(nil, 1<<20), false},
		{"length not a varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
		{"stream ends mid-frame", []byte{40, 8, 1}, true},
		{"stream ends mid-length", []byte{0x80}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newLogicalClock(false)
			srv := start(t, Config{ExecMin: 1e6, ExecMax: 3e6, MaxFrame: 1024, Clock: clock})
			c := dial(t, srv)
			var buf []byte
			for seq := uint64(1); seq <= 20; seq++ {
				b, _ := protodelimBytes(valid(int64(seq%3+1), seq))
				buf = append(buf, b...)
			}
			c.sendRaw(append(buf, tt.tail...))
			if tt.half {
				c.nc.(interface{ CloseWrite() error }).CloseWrite()
			}
			got := c.recvUntilEOF()
			if len(got) != 20 {
				t.Fatalf("got %d responses before the connection closed, want 20", len(got))
			}
			for _, r := range got {
				if r.GetReason() != ack {
					t.Errorf("response %v, want ACK", r)
				}
			}
			waitFor(t, "broken frame counted", func() bool { return srv.Stats().BrokenFrames == 1 })
		})
	}
}

// Orders of one account run one at a time, in order, across asynchronous
// execution; other accounts run beside them. The logical clock orders
// every timestamp, so an order dispatched while its predecessor was still
// executing would show dispatched < the predecessor's done.
func TestAccountsSerializedAcrossExecution(t *testing.T) {
	t.Parallel()
	srv := start(t, Config{ExecMin: 0, ExecMax: 2e6, Clock: newLogicalClock(false)})
	const accounts, perAccount = 12, 25
	clients := []*client{dial(t, srv), dial(t, srv)}
	for seq := uint64(1); seq <= perAccount; seq++ {
		for a := int64(1); a <= accounts; a++ {
			clients[a%2].send(valid(a, seq))
		}
	}
	lastDone := map[int64]int64{}
	lastSeq := map[int64]uint64{}
	for i, c := range clients {
		for _, r := range c.recvN(accounts / 2 * perAccount) {
			a := r.GetCorrelationId()
			if a%2 != int64(i) {
				t.Fatalf("account %d answered on connection %d", a, i)
			}
			if r.GetSeqInFamily() != lastSeq[a]+1 {
				t.Errorf("account %d: seq %d after %d", a, r.GetSeqInFamily(), lastSeq[a])
			}
			if r.GetDispatchedNs() <= lastDone[a] {
				t.Errorf("account %d seq %d dispatched at %d, before seq %d was done at %d",
					a, r.GetSeqInFamily(), r.GetDispatchedNs(), lastSeq[a], lastDone[a])
			}
			lastSeq[a], lastDone[a] = r.GetSeqInFamily(), r.GetDoneNs()
		}
	}
}

// An executing order holds its account: the next one waits in the
// engine, not on a worker, until the execution timer fires.
func TestExecutionHoldsAccountNotWorker(t *testing.T) {
	t.Parallel()
	clock := newLogicalClock(true)
	srv := start(t, Config{Partitions: 1, Workers: 1, ExecMin: 1e6, ExecMax: 1e6, Clock: clock})
	c := dial(t, srv)
	c.send(valid(1, 1), valid(1, 2), valid(2, 1), valid(3, 1))
	// With one worker, three accounts executing at once prove that
	// execution does not occupy it.
	clock.waitPending(t, 3)
	waitFor(t, "the second order of account 1 queued", func() bool {
		p := srv.Stats().Partitions[0]
		return p.Submitted == 4 && p.QueuedBehindBusy == 1
	})
	if p := srv.Stats().Partitions[0]; p.Dispatched != 3 || p.Queued != 1 {
		t.Fatalf("dispatched %d, queued %d; want 3 and 1 while account 1 executes", p.Dispatched, p.Queued)
	}
	clock.fire()
	got := c.recvN(3)
	for _, r := range got {
		if r.GetCorrelationId() == 1 && r.GetSeqInFamily() != 1 {
			t.Fatalf("account 1 answered seq %d first", r.GetSeqInFamily())
		}
	}
	clock.waitPending(t, 1)
	clock.fire()
	if r := c.recv(); r.GetCorrelationId() != 1 || r.GetSeqInFamily() != 2 || r.GetReason() != ack {
		t.Fatalf("last response %v, want ACK for account 1 seq 2", r)
	}
}

// Uncorrelated orders are spread over every partition.
func TestUncorrelatedSpread(t *testing.T) {
	t.Parallel()
	srv := start(t, Config{Partitions: 4})
	c := dial(t, srv)
	var orders []*omsv1.Order
	for i := range 64 {
		o := valid(-1, 0)
		o.ClientOrderId = uint64(i)
		orders = append(orders, o)
	}
	c.send(orders...)
	seen := map[int32]int{}
	for _, r := range c.recvN(len(orders)) {
		if r.GetReason() != ack {
			t.Fatalf("response %v, want ACK", r)
		}
		seen[r.GetPartition()]++
	}
	if len(seen) != 4 {
		t.Fatalf("uncorrelated orders ran on partitions %v, want all 4", seen)
	}
}

// A panic inside the pipeline still answers its order, REJ INTERNAL, and
// the account goes on.
func TestPanicStillAnswers(t *testing.T) {
	t.Parallel()
	srv := start(t, Config{beforeStages: func(o *order) {
		if o.clientOrderID == 13 {
			panic("boom")
		}
	}})
	c := dial(t, srv)
	bad := valid(5, 1)
	bad.ClientOrderId = 13
	c.send(bad, valid(5, 2))
	got := c.recvN(2)
	if got[0].GetReason() != omsv1.Reason_REASON_INTERNAL || got[0].GetClientOrderId() != 13 {
		t.Errorf("first response %v, want REJ INTERNAL for order 13", got[0])
	}
	if got[1].GetReason() != ack || got[1].GetSeqInFamily() != 2 {
		t.Errorf("second response %v, want ACK seq 2", got[1])
	}
}

package oms

import omsv1 "github.com/boomerangd/boomerang/api/oms/v1"

// order is what the connection reader hands to the engine: the decoded
// request plus where to answer it. It is a value, copied into the ring,
// so accepting an order allocates nothing beyond its symbol.
type order struct {
	conn          *conn
	correlationID int64
	seq           uint64
	clientOrderID uint64
	symbol        string
	side          omsv1.Side
	quantity      int64
	price         int64
	clientTs      int64
	receivedNs    int64
	// undecodable says why the body did not decode; empty when it did.
	// Such an order still flows through the pipeline and is rejected
	// BAD_MSG by stage 1.
	undecodable string
}

// response is stage 4's output, queued for the connection's writer.
type response struct {
	correlationID int64
	seq           uint64
	clientOrderID uint64
	partition     int32
	decision      omsv1.Decision
	reason        omsv1.Reason
	detail        string
	receivedNs    int64
	dispatchedNs  int64
	doneNs        int64
	clientTs      int64
}

// fill copies the wire message into o.
func (o *order) fill(m *omsv1.Order) {
	o.correlationID = m.GetCorrelationId()
	o.seq = m.GetSeqInFamily()
	o.clientOrderID = m.GetClientOrderId()
	o.symbol = m.GetSymbol()
	o.side = m.GetSide()
	o.quantity = m.GetQuantity()
	o.price = m.GetPrice()
	o.clientTs = m.GetClientTsNs()
}

// toProto writes r into a reusable wire message.
func (r *response) toProto(m *omsv1.Response) {
	m.CorrelationId = r.correlationID
	m.SeqInFamily = r.seq
	m.ClientOrderId = r.clientOrderID
	m.Partition = r.partition
	m.Decision = r.decision
	m.Reason = r.reason
	m.Detail = r.detail
	m.ReceivedNs = r.receivedNs
	m.DispatchedNs = r.dispatchedNs
	m.DoneNs = r.doneNs
	m.ClientTsNs = r.clientTs
}

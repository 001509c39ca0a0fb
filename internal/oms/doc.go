// Package oms is the Mini-OMS: a TCP order server that runs every order
// through a four-stage pipeline on the dispatch engine, keeping the orders
// of one account (correlation id) in FIFO order and one at a time while
// accounts run in parallel, and answering every order with exactly one
// ACK or REJ. cmd/minioms runs it; cmd/omsload loads and checks it.
//
// # Protocol
//
// Frames in both directions are protobuf messages preceded by their length
// as a varint (the protodelim format); the messages are omsv1.Order and
// omsv1.Response in api/oms/v1. A correlation id greater than zero names a
// family: its orders are answered in arrival order, except the immediate
// rejects described below. Zero or negative ids are uncorrelated and
// spread over all partitions.
//
// # Pipeline
//
//	reader: frame → decode → TrySubmit ──► engine (partition by id, gate per id)
//	                         │ full: REJ BUSY / GROUP_FULL at once
//	worker: 1 validate → 2 risk → 3 execute (timer) → 4 respond ──► outbox ──► writer
//
// The stages, on a worker goroutine:
//
//  1. Validate: an undecodable body, missing symbol, unknown side, or
//     quantity or price <= 0 is REJ BAD_MSG.
//  2. Risk, in this order: UNKNOWN_SYMBOL, RISK_SYMBOL_HALTED,
//     RISK_QTY_LIMIT, RISK_PRICE_BAND (around the symbol's reference
//     price), RISK_NOTIONAL_LIMIT.
//  3. Execute, accepted orders only: wait a time drawn from
//     [ExecMin, ExecMax] on a timer. The handler returns dispatch.Later,
//     so no worker is held; the account stays busy until the timer
//     fires.
//  4. Respond: build the response and queue it for the connection, then
//     complete the task, so the account's next order answers after it.
//
// The reader never writes to the socket. An order that does not decode
// becomes a BAD_MSG task like any other, routed by the correlation id
// recovered from the fields before the damage. Only a broken frame (a
// length over MaxFrame, a malformed length, a stream ending mid-frame)
// ends the connection, after the orders already read are answered.
//
// # Backpressure
//
// Admission never blocks. A full partition ring answers REJ BUSY, a
// correlation id with MaxPending orders waiting answers REJ GROUP_FULL, a
// stopping server answers REJ SHUTTING_DOWN; such orders never enter the
// pipeline, and their answers can overtake earlier orders of the same
// account that are still running.
//
// # Slow consumers
//
// Each connection has one writer and a bounded outbox of responses. The
// writer sends whatever has queued as one batch. A client that stops
// reading first fills its socket buffers, then its outbox; when the
// outbox holds OutboxLimit responses, or one write has blocked for
// WriteTimeout, the connection is closed and its remaining responses are
// dropped and counted (Stats.Dropped, Stats.SlowConsumers). Workers never
// wait for a client, so other clients do not notice.
//
// # Shutdown
//
// Stop stops accepting, stops reading, lets every accepted order run (up
// to DrainTimeout; later ones are answered SHUTTING_DOWN), writes every
// response, and closes each connection after its last response.
//
// # Observability
//
// Every StatsInterval the server logs one line per partition (orders
// received, BUSY and GROUP_FULL rejects, accepted, ACKs, REJs,
// dispatched, completed, queued behind a busy account, deepest account
// queue, queued, in flight) and one line of totals. It never logs per
// order.
package oms

// Package omsload is the Mini-OMS load generator and checker behind
// cmd/omsload.
//
// A run opens connections to the server and gives each a set of accounts
// (correlation ids) it alone sends, in seq order, so the answers can be
// checked per account. Each connection has a sender and a receiver. The
// receiver checks every answer against what was sent: exactly one answer
// per order, none for orders never sent, per-account seq strictly
// increasing in answer order (immediate admission rejects aside, which
// may overtake), and, for orders built to fail, the expected reason.
//
// # Load
//
// In open loop (Config.Rate > 0) each connection sends on a fixed
// schedule whatever happens to the answers, and latency runs from the
// scheduled send time, so a server (or sender) that stalls is charged for
// the whole delay: the correction for coordinated omission. In closed loop
// each connection keeps up to Config.Window orders unanswered and sends
// as fast as answers come back, which finds peak throughput. Latency is
// recorded in HdrHistograms.
//
// # Scenarios
//
//   - many-families: 10,000 accounts, 100,000 valid orders.
//   - hot-family: one account with half the orders (30,000 of 60,000) on
//     its own connection, beside 1,000 other accounts; latency is
//     reported separately for the hot and the other accounts.
//   - uncorrelated: 100,000 orders with correlation id -1.
//   - mixed: 1,000 accounts; 70 % valid orders, 10 % malformed (BAD_MSG),
//     20 % failing risk checks (UNKNOWN_SYMBOL and the RISK_* reasons),
//     each with its expected answer.
package omsload

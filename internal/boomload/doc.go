// Package boomload is the load generator behind "boomtool bench": it
// registers tasks on a Boomerang server as fast as the server acknowledges
// them, over several SDK connections with many requests in flight on each,
// and reports acknowledged registrations per second and the latency from
// sending a registration to its acknowledgement.
//
// Every registration is durable: the server answers only once the task is
// synced to disk, so throughput measures the whole write path, group
// commit included. Tasks are due far in the future by default (Config.Delay)
// so the run measures registration, not delivery; they stay on the server
// afterwards (under their group prefix, so they are easy to find).
//
// The load is closed loop: each connection keeps Depth requests in
// flight and sends the next when one is answered. A request registers one
// task (RegisterTask), or with Config.Batch above 1 that many tasks
// (RegisterTasks); throughput counts tasks, and latency is the time from
// sending a request to its answer, whatever its size. Latency is recorded
// in an HdrHistogram from 1 µs to 1 minute with 3 significant digits.
package boomload

package oms

import (
	"time"

	"github.com/boomerangd/boomerang/internal/mix"
)

// execDelay is stage 3's simulated execution time for o: uniform in
// [min, max], drawn from a hash of seed and the order's ids rather than a
// shared random source, so workers need no lock and a given order always
// takes the same time, whatever else runs beside it.
func execDelay(o *order, seed uint64, min, max time.Duration) time.Duration {
	span := uint64(max - min)
	if span == 0 {
		return min
	}
	h := mix.Mix64(seed ^ mix.Mix64(uint64(o.correlationID)^mix.Mix64(o.seq^mix.Mix64(o.clientOrderID))))
	return min + time.Duration(h%(span+1))
}

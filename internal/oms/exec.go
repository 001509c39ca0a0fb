package oms

import "time"

// execDelay is stage 3's simulated execution time for o: uniform in
// [min, max], drawn from a hash of seed and the order's ids rather than a
// shared random source, so workers need no lock and a given order always
// takes the same time, whatever else runs beside it.
func execDelay(o *order, seed uint64, min, max time.Duration) time.Duration {
	span := uint64(max - min)
	if span == 0 {
		return min
	}
	h := mix64(seed ^ mix64(uint64(o.correlationID)^mix64(o.seq^mix64(o.clientOrderID))))
	return min + time.Duration(h%(span+1))
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

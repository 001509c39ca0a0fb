// Package mix has the integer mixing function the engine's routing and
// the store's shard mapping share.
package mix

// Mix64 is the splitmix64 finalizer: consecutive integers spread over all
// bits, so masking the low bits picks partitions or shards evenly. The
// store's group-to-shard mapping depends on it, so it is part of the
// on-disk format and must never change.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

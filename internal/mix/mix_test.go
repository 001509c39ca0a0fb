package mix

import "testing"

// Mix64 is part of the store's on-disk format (group to shard): these
// values must never change.
func TestMix64IsStable(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{0x0, 0x0},
		{0x1, 0x5692161d100b05e5},
		{0x2, 0xdbd238973a2b148a},
		{0xdeadbeef, 0x4e062702ec929eea},
		{0x8000000000000000, 0x25c26ea579cea98a},
	} {
		if got := Mix64(c.in); got != c.want {
			t.Errorf("Mix64(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

package wheel

import (
	"fmt"
	"math/bits"
	"time"
)

// Defaults for Config fields left at zero.
const (
	// DefaultTick is the wheel's resolution.
	DefaultTick = time.Millisecond
	// DefaultSlotsPerLevel is the number of slots on each level.
	DefaultSlotsPerLevel = 256
	// DefaultSpan is how far ahead the default number of levels reaches
	// without re-cascading: 2^32 ms, about 49.7 days, which is 4 levels
	// at the default tick and slots.
	DefaultSpan = (1 << 32) * time.Millisecond
)

const (
	// maxSlotsPerLevel keeps a level's occupancy bitmap within 64 words,
	// so one summary word can find its next non-empty slot.
	maxSlotsPerLevel = 64 * 64
	// maxTickBits bounds Levels×log2(SlotsPerLevel): ticks are
	// non-negative int64 values, so more digits than 63 bits would never
	// be used.
	maxTickBits = 63
)

// Config configures a Wheel. Zero fields take the defaults above; the
// result is then validated.
type Config struct {
	// Tick is the wheel's resolution: timers whose due times fall in the
	// same tick fire together, in the order they were added. Must be
	// positive. Default 1 ms.
	Tick time.Duration

	// SlotsPerLevel is the number of slots on each level, a power of two
	// from 2 to 4096. More slots mean fewer levels and cascades, and more
	// memory per wheel (8 bytes per slot). Default 256.
	SlotsPerLevel int

	// Levels is the number of levels. The wheel spans
	// Tick×SlotsPerLevel^Levels; timers due later wait in the top level
	// and are re-cascaded once per span until they come within it.
	// Levels×log2(SlotsPerLevel) may not exceed 63. Default: the fewest
	// levels that span DefaultSpan (4 at 1 ms and 256 slots).
	Levels int
}

func (c *Config) ensureDefaults() {
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.SlotsPerLevel == 0 {
		c.SlotsPerLevel = DefaultSlotsPerLevel
	}
	if c.Levels == 0 && c.Tick > 0 && powerOfTwo(c.SlotsPerLevel) && c.SlotsPerLevel > 1 {
		c.Levels = levelsFor(DefaultSpan, c.Tick, slotBits(c.SlotsPerLevel))
	}
}

func (c *Config) validate() error {
	switch {
	case c.Tick <= 0:
		return fmt.Errorf("wheel: Config.Tick must be positive, got %v", c.Tick)
	case !powerOfTwo(c.SlotsPerLevel) || c.SlotsPerLevel < 2 || c.SlotsPerLevel > maxSlotsPerLevel:
		return fmt.Errorf("wheel: Config.SlotsPerLevel must be a power of two from 2 to %d, got %d",
			maxSlotsPerLevel, c.SlotsPerLevel)
	case c.Levels < 1 || c.Levels*int(slotBits(c.SlotsPerLevel)) > maxTickBits:
		return fmt.Errorf("wheel: Config.Levels must be between 1 and %d for %d slots per level, got %d",
			maxTickBits/int(slotBits(c.SlotsPerLevel)), c.SlotsPerLevel, c.Levels)
	}
	return nil
}

// levelsFor returns the fewest levels of 2^bitsPerLevel slots whose span
// reaches span at the given tick.
func levelsFor(span, tick time.Duration, bitsPerLevel uint) int {
	ticks := uint64((span + tick - 1) / tick)
	if ticks <= 1 {
		return 1
	}
	need := uint(bits.Len64(ticks - 1)) // bits to count ticks-1
	return int((need + bitsPerLevel - 1) / bitsPerLevel)
}

func slotBits(slots int) uint { return uint(bits.TrailingZeros(uint(slots))) }

func powerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }

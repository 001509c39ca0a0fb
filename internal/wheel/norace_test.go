//go:build !race

package wheel

// defaultModelOps sizes TestWheelMatchesReference per configuration and
// seed; -wheel.ops overrides it.
const defaultModelOps = 1_000_000

//go:build race

package wheel

// defaultModelOps keeps TestWheelMatchesReference near ten seconds under
// the race detector on two cores.
const defaultModelOps = 200_000

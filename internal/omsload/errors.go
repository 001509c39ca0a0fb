package omsload

import "errors"

var (
	// ErrUnknownScenario is returned for a scenario name not in
	// Scenarios().
	ErrUnknownScenario = errors.New("omsload: unknown scenario")

	// ErrRiskConfig means the risk settings leave no way to build an
	// order the mixed scenario needs (for example, no halted symbol).
	ErrRiskConfig = errors.New("omsload: risk settings cannot produce the mixed scenario's orders")
)

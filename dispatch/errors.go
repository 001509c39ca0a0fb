package dispatch

import "errors"

var (
	// ErrBusy is returned by TrySubmit when the partition's ring is full.
	// The task was not accepted; the caller may retry later or shed load.
	ErrBusy = errors.New("dispatch: partition busy")

	// ErrGroupFull is returned by TrySubmit when the family already has
	// Config.MaxPending tasks waiting. Other families are unaffected.
	ErrGroupFull = errors.New("dispatch: group pending queue full")

	// ErrClosed is returned once Close has been called.
	ErrClosed = errors.New("dispatch: engine closed")

	// ErrNotBlocked is returned by Unblock and Skip when the family is not
	// blocked.
	ErrNotBlocked = errors.New("dispatch: group not blocked")

	// ErrUncorrelated is returned by Unblock and Skip for a key that cannot
	// name a family.
	ErrUncorrelated = errors.New("dispatch: key is uncorrelated")
)

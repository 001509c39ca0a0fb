package oms

import "errors"

var (
	// ErrFrameTooLarge means a frame's length prefix exceeds
	// Config.MaxFrame. The connection is closed.
	ErrFrameTooLarge = errors.New("oms: frame too large")

	// ErrTruncated means the stream ended inside a frame. The connection
	// is closed.
	ErrTruncated = errors.New("oms: truncated frame")

	// ErrBadLength means a frame's length prefix is not a valid varint.
	// The connection is closed.
	ErrBadLength = errors.New("oms: malformed frame length")

	// ErrStarted is returned by Start on a server already started.
	ErrStarted = errors.New("oms: server already started")

	// ErrDrainTimeout is returned by Stop when Config.DrainTimeout ran out
	// before every accepted order had run; the rest were answered REJ
	// SHUTTING_DOWN.
	ErrDrainTimeout = errors.New("oms: drain timed out")

	// ErrUnanswered is returned by Stop when some connection still owed
	// responses after every order should have been answered. It means a
	// bug; the connections were closed anyway.
	ErrUnanswered = errors.New("oms: connections closed with responses owed")
)

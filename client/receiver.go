package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// Handler handles one callback delivery. Returning nil acknowledges it;
// returning an error fails the attempt, and the server retries it
// according to the task's retry policy. UDP has no answer: there the
// result only counts in the receiver's stats.
//
// Deliveries are at least once (UDP: at most once): the same occurrence of
// a task can arrive again after a timeout, a lost acknowledgement or a
// server restart. A handler with effects that must not repeat should
// deduplicate by (TaskId, FireAtMs), which names one occurrence of a task;
// Attempt and DeliveryId change from one attempt to the next.
//
// Term is the Raft term in which the sender leads the task's shard. A
// leader that was replaced may still deliver for a short while, with a
// lower term than its successor; Fence.Wrap drops such deliveries.
//
// Handlers run concurrently, including deliveries of the same group when
// their earlier attempts timed out. The context is cancelled when the
// receiver shuts down (and, for HTTP and gRPC, when the server gives up
// waiting).
type Handler func(ctx context.Context, d *boomerangv1.Delivery) error

// Receiver errors.
var (
	// ErrReceiverClosed is returned by Serve after Close.
	ErrReceiverClosed = errors.New("client: receiver closed")
	// ErrNoSignature: an HTTP delivery carries no v1 signature.
	ErrNoSignature = errors.New("client: webhook has no signature")
	// ErrBadSignature: an HTTP delivery's signature does not match the
	// secret: it was not sent by Boomerang with this client's secret, or
	// was altered.
	ErrBadSignature = errors.New("client: webhook signature does not match")
	// ErrStaleSignature: an HTTP delivery's timestamp is too far from the
	// receiver's clock: a replay, or clocks out of step.
	ErrStaleSignature = errors.New("client: webhook timestamp outside tolerance")
	// ErrBadHeader: an HTTP delivery's Boomerang headers are missing or
	// malformed.
	ErrBadHeader = errors.New("client: bad webhook header")
)

// webhookErrors maps the wire format's errors to the receiver's.
var webhookErrors = []struct{ from, to error }{
	{webhook.ErrNoSignature, ErrNoSignature},
	{webhook.ErrBadSignature, ErrBadSignature},
	{webhook.ErrStale, ErrStaleSignature},
	{webhook.ErrBadHeader, ErrBadHeader},
}

// receiverError restates an error of the webhook package as one of this
// package's, keeping its detail.
func receiverError(err error) error {
	for _, m := range webhookErrors {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w%s", m.to, strings.TrimPrefix(err.Error(), m.from.Error()))
		}
	}
	return err
}

// Receiver defaults.
const (
	// DefaultSignatureTolerance is how far an HTTP delivery's timestamp
	// may be from the receiver's clock.
	DefaultSignatureTolerance = webhook.DefaultTolerance
	// DefaultMaxDelivery bounds a delivery's payload (HTTP body, TCP
	// frame) a receiver accepts, in bytes.
	DefaultMaxDelivery = 16 << 20
	// DefaultReceiverInFlight bounds the handlers a TCP connection runs
	// at once.
	DefaultReceiverInFlight = 256
	// DefaultUDPReaders is the number of goroutines a UDP receiver reads
	// and handles datagrams with.
	DefaultUDPReaders = 16
)

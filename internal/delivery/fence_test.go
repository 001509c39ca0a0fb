package delivery

import (
	"context"
	"slices"
	"sync"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A receiver of each protocol, its handler wrapped in a Fence, drops a
// delivery sent after its group saw a newer leader, and acknowledges it:
// the attempt succeeds without the handler running.
func TestFencedReceiversDropAReplacedLeadersDelivery(t *testing.T) {
	for _, proto := range []string{"http", "grpc", "tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			fence := client.NewFence(0)
			var mu sync.Mutex
			var handled []string
			h := fence.Wrap(func(_ context.Context, d *boomerangv1.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, string(d.Payload))
				return nil
			})
			var cb *storepb.Callback
			switch proto {
			case "http":
				cb = httpCallback(receiverServer(t, testSecret, h).URL)
			case "grpc":
				cb = grpcCallback(grpcReceiver(t, h))
			case "tcp":
				cb = tcpCallback(tcpReceiver(t, h).Addr().String())
			case "udp":
				addr, _ := udpReceiverInFlight(t, h, 1)
				cb = udpCallback(addr)
			}
			e, _ := newEngine(t, cb, nil)
			for _, step := range []struct {
				payload, group string
				term           uint64
			}{
				{"new leader", "g", 5},
				{"replaced leader", "g", 4},
				{"another group", "h", 1},
			} {
				tk := task(step.payload)
				tk.Group = step.group
				if err := deliverInTerm(e, tk, 1, step.term).wait(t); err != nil {
					t.Fatalf("%s: %v", step.payload, err)
				}
			}
			// UDP is done once sent: wait until the receiver has seen all three.
			eventually(t, "three deliveries", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(handled)+int(fence.Stale()) == 3
			})
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"new leader", "another group"}; !slices.Equal(handled, want) || fence.Stale() != 1 {
				t.Fatalf("handled %q with %d stale, want %q and 1", handled, fence.Stale(), want)
			}
		})
	}
}

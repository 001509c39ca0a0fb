package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// The server takes the queue sink callbacks from the SDK, and says which
// field is wrong, and why, when one does not parse.
func TestScheduleWithQueueSinkCallbacks(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, tc := range []struct {
		protocol boomerangv1.Protocol
		endpoint string
		problem  string // "" when valid
	}{
		{boomerangv1.Protocol_PROTOCOL_ACTIVEMQ, "activemq://user:pw@127.0.0.1:61613/queue/orders.{group}", ""},
		{boomerangv1.Protocol_PROTOCOL_SQS, "sqs://127.0.0.1:9324/000000000000/orders.fifo?tls=false&region=us-east-1", ""},
		{boomerangv1.Protocol_PROTOCOL_SQS, "sqs://eu-west-1/orders.fifo", ""},
		{boomerangv1.Protocol_PROTOCOL_ACTIVEMQ, "activemq://127.0.0.1:61613/orders", "/queue/NAME or /topic/NAME"},
		{boomerangv1.Protocol_PROTOCOL_SQS, "sqs://eu-west-1/orders", "must be a FIFO queue"},
	} {
		cb := &boomerangv1.Callback{Protocol: tc.protocol, Endpoint: tc.endpoint}
		task, err := c.Schedule(ctx, []byte("x"), client.After(time.Hour), client.WithCallback(cb))
		if tc.problem == "" {
			if err != nil || task.GetCallback().GetEndpoint() != tc.endpoint {
				t.Errorf("%s: task %v, %v", tc.endpoint, task, err)
			}
			continue
		}
		var e *client.Error
		if !errors.As(err, &e) || e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field != "callback.endpoint" || !strings.Contains(e.Message, tc.problem) {
			t.Errorf("%s: %v, want INVALID_REQUEST on callback.endpoint saying %q", tc.endpoint, err, tc.problem)
		}
	}
}

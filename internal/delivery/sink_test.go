package delivery

import (
	"strings"
	"testing"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestValidateSinkCallbacks(t *testing.T) {
	const (
		n = storepb.Protocol_PROTOCOL_NATS
		a = storepb.Protocol_PROTOCOL_AMQP
		m = storepb.Protocol_PROTOCOL_ACTIVEMQ
	)
	for _, tc := range []struct {
		p        storepb.Protocol
		endpoint string
		valid    bool
	}{
		{n, "nats://127.0.0.1:4222/orders", true},
		{n, "nats://user:secret@nats.internal/orders.{group}.created", true},
		{n, "nats://nats.internal/{group}", true},
		{n, "nats://nats.internal", false},           // no subject
		{n, "nats://nats.internal/orders.*", false},  // wildcard
		{n, "nats://nats.internal/orders..x", false}, // empty token
		{n, "nats://nats.internal/a b", false},
		{n, "nats://nats.internal/x?stream=y", false},
		{n, "http://nats.internal/orders", false},
		{n, "nats://:4222/orders", false},
		{n, "nats://h:0/orders", false},
		{n, "127.0.0.1:4222", false},
		{a, "amqp://guest:guest@127.0.0.1:5672/?routing_key=orders", true},
		{a, "amqp://rabbit/prod?exchange=events&routing_key=orders.{group}", true},
		{a, "amqps://rabbit/%2f?exchange=fanout&heartbeat=10", true},
		{a, "amqp://rabbit/", false},                           // neither exchange nor routing key
		{a, "amqp://rabbit/?routing_key=x&queue=y", false},     // unknown parameter
		{a, "amqp://rabbit/?routing_key=x&heartbeat=z", false}, // amqp091-go refuses it
		{a, "amqp://rabbit/?routing_key=" + strings.Repeat("k", 256), false},
		{a, "nats://rabbit/?routing_key=x", false},
		{a, "amqp://rabbit:70000/?routing_key=x", false},
		{m, "activemq://user:pw@127.0.0.1:61613/queue/orders", true},
		{m, "activemq://broker/topic/orders.{group}", true},
		{m, "activemqs://broker:61612/queue/orders", true},
		{m, "activemq://broker", false},                // no destination
		{m, "activemq://broker/orders", false},         // neither queue nor topic
		{m, "activemq://broker/queue/", false},         // empty name
		{m, "activemq://broker/queue/orders.>", false}, // wildcard
		{m, "activemq://broker/queue/a,b", false},      // composite
		{m, "activemq://broker/queue/a/b", false},      // slash
		{m, "activemq://broker/queue/x?persistent=0", false},
		{m, "stomp://broker/queue/x", false},
	} {
		err := ValidateCallback(&storepb.Callback{Protocol: tc.p, Endpoint: tc.endpoint}, 0)
		if (err == nil) != tc.valid {
			t.Errorf("ValidateCallback(%v %q) = %v, want valid %v", tc.p, tc.endpoint, err, tc.valid)
		}
	}
}

func TestWithGroup(t *testing.T) {
	for _, tc := range []struct{ template, group, want string }{
		{"orders", "g", "orders"},
		{"orders.{group}", "eu.17", "orders.eu.17"},
		{"orders.{group}", "", "orders._"},
		{"{group}.{group}", "x", "x.x"},
	} {
		if got := withGroup(tc.template, &storepb.Task{Group: tc.group}); got != tc.want {
			t.Errorf("withGroup(%q, %q) = %q, want %q", tc.template, tc.group, got, tc.want)
		}
	}
}

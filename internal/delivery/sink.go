package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// GroupPlaceholder in a NATS subject or an AMQP routing key is replaced by
// the task's group, or by UngroupedToken for a task without one.
const (
	GroupPlaceholder = "{group}"
	UngroupedToken   = "_"
)

// Default ports of the queue sinks when an endpoint names none.
const (
	defaultNATSPort  = "4222"
	defaultAMQPPort  = "5672"
	defaultAMQPSPort = "5671"
	maxRoutingKeyLen = 255 // an AMQP short string
)

// natsEndpoint is a parsed nats://[user[:password]@]host[:port]/subject.
type natsEndpoint struct {
	server  string // the URL without the subject: one connection each
	subject string // may hold GroupPlaceholder
}

func parseNATSEndpoint(endpoint string) (natsEndpoint, error) {
	u, err := parseSinkURL(endpoint, "nats", defaultNATSPort)
	if err != nil {
		return natsEndpoint{}, err
	}
	if u.RawQuery != "" {
		return natsEndpoint{}, errors.New("must not have a query: the subject is the path, nats://host:port/subject")
	}
	subject := strings.TrimPrefix(u.Path, "/")
	if err := checkSubject(strings.ReplaceAll(subject, GroupPlaceholder, "g")); err != nil {
		return natsEndpoint{}, err
	}
	u.Path, u.RawPath = "", ""
	return natsEndpoint{server: u.String(), subject: subject}, nil
}

// checkSubject accepts a NATS subject one can publish to: dot-separated
// non-empty tokens, no wildcard, no white space or control characters.
func checkSubject(s string) error {
	if s == "" {
		return errors.New("must name a subject: nats://host:port/subject")
	}
	for tok := range strings.SplitSeq(s, ".") {
		switch {
		case tok == "":
			return fmt.Errorf("subject %q has an empty token", s)
		case tok == "*" || tok == ">":
			return fmt.Errorf("subject %q has a wildcard: publish subjects are literal", s)
		case strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			return fmt.Errorf("subject %q has white space or a control character", s)
		}
	}
	return nil
}

// amqpEndpoint is a parsed
// amqp[s]://[user[:password]@]host[:port][/vhost]?exchange=…&routing_key=….
type amqpEndpoint struct {
	uri        string // the URL without exchange and routing key: one connection each
	exchange   string
	routingKey string // may hold GroupPlaceholder
}

// amqpConnParams are the query parameters that configure the connection
// itself (amqp091-go reads them); exchange and routing_key are ours.
var amqpConnParams = []string{"heartbeat", "connection_timeout", "channel_max"}

func parseAMQPEndpoint(endpoint string) (amqpEndpoint, error) {
	scheme, port := "amqp", defaultAMQPPort
	if strings.HasPrefix(endpoint, "amqps:") {
		scheme, port = "amqps", defaultAMQPSPort
	}
	u, err := parseSinkURL(endpoint, scheme, port)
	if err != nil {
		return amqpEndpoint{}, err
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return amqpEndpoint{}, fmt.Errorf("bad query: %v", err)
	}
	ep := amqpEndpoint{exchange: q.Get("exchange"), routingKey: q.Get("routing_key")}
	conn := url.Values{}
	for key, vals := range q {
		switch {
		case key == "exchange" || key == "routing_key":
		case slices.Contains(amqpConnParams, key):
			conn[key] = vals
		default:
			return amqpEndpoint{}, fmt.Errorf("unknown query parameter %q: want exchange, routing_key, heartbeat, connection_timeout or channel_max", key)
		}
	}
	switch {
	case ep.exchange == "" && ep.routingKey == "":
		return amqpEndpoint{}, errors.New("must set routing_key (the queue, on the default exchange) or exchange")
	case len(strings.ReplaceAll(ep.routingKey, GroupPlaceholder, "")) > maxRoutingKeyLen || len(ep.exchange) > maxRoutingKeyLen:
		return amqpEndpoint{}, fmt.Errorf("exchange and routing_key must be at most %d bytes", maxRoutingKeyLen)
	}
	u.RawQuery = conn.Encode()
	ep.uri = u.String()
	if _, err := amqp.ParseURI(ep.uri); err != nil {
		return amqpEndpoint{}, err
	}
	return ep, nil
}

// parseSinkURL checks the parts every queue sink URL shares and fills in
// the default port.
func parseSinkURL(endpoint, scheme, port string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return nil, fmt.Errorf("must be a %s:// URL: %v", scheme, err)
	case u.Scheme != scheme:
		return nil, fmt.Errorf("must be a %s:// URL, got scheme %q", scheme, u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("must be a %s:// URL with a host", scheme)
	case u.Fragment != "":
		return nil, errors.New("must not have a fragment")
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return nil, err
		}
	} else {
		u.Host += ":" + port
	}
	return u, nil
}

// sinkHost is the broker host of a queue sink's endpoint, for the
// callback policy; ok is false for other protocols.
func sinkHost(p storepb.Protocol, endpoint string) (string, bool) {
	switch p {
	case storepb.Protocol_PROTOCOL_NATS, storepb.Protocol_PROTOCOL_AMQP, storepb.Protocol_PROTOCOL_ACTIVEMQ:
	case storepb.Protocol_PROTOCOL_SQS:
		ep, err := parseSQSEndpoint(endpoint)
		return ep.host(), err == nil
	default:
		return "", false
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false
	}
	return u.Hostname(), true
}

// brokerDialer dials brokers through the engine's dialer, so that every
// address is checked against the callback policy, as for the other
// transports; the client libraries take a dial function without a
// context.
type brokerDialer struct {
	e *Engine
}

func (d brokerDialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(d.e.ctx, d.e.cfg.DefaultTimeout)
	defer cancel()
	return d.e.dialer().DialContext(ctx, network, address)
}

// withGroup fills GroupPlaceholder with the task's group.
func withGroup(template string, t *storepb.Task) string {
	if !strings.Contains(template, GroupPlaceholder) {
		return template
	}
	g := t.Group
	if g == "" {
		g = UngroupedToken
	}
	return strings.ReplaceAll(template, GroupPlaceholder, g)
}

// sinkMessageID identifies an occurrence for the broker's de-duplication:
// the task id and the occurrence's due time, the pair receivers already
// de-duplicate webhooks by. Every attempt of one occurrence carries the
// same id, so a retry after an acknowledgement that was lost (a timeout,
// a broken connection, a crash) is recognised as a duplicate.
func sinkMessageID(t *storepb.Task) string {
	return strconv.FormatUint(t.Id, 10) + "-" + strconv.FormatInt(t.DueMs, 10)
}

// sinkHeaders are the Boomerang headers of a queued message, the webhook
// headers less the signature: the broker authenticates publishers.
func sinkHeaders(a *attempt, set func(name, value string)) {
	t := a.task
	set(webhook.HeaderDeliveryID, strconv.FormatUint(a.id, 10))
	set(webhook.HeaderTaskID, strconv.FormatUint(t.Id, 10))
	set(webhook.HeaderAttempt, strconv.FormatUint(uint64(a.number), 10))
	set(webhook.HeaderFireAt, strconv.FormatInt(t.DueMs, 10))
	set(webhook.HeaderClient, webhook.Escape(t.Client))
	set(webhook.HeaderGroup, webhook.Escape(t.Group))
	set(webhook.HeaderTerm, strconv.FormatUint(a.term, 10))
}

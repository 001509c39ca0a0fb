package delivery

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// Limits of SQS FIFO messages.
const (
	// sqsMaxGroupID bounds MessageGroupId (and MessageDeduplicationId).
	sqsMaxGroupID = 128
	// sqsMaxBatch is the most entries one SendMessageBatch takes.
	sqsMaxBatch = 10
	// sqsMaxBatchBytes bounds the messages one SendMessageBatch carries,
	// SQS's limit for a message and for a whole batch before 2025: a
	// message over it goes alone.
	sqsMaxBatchBytes = 256 << 10
	// sqsMaxQueueName bounds a queue name, .fifo included.
	sqsMaxQueueName = 80
)

// Values of HeaderBodyEncoding: SQS takes only non-empty Unicode text as
// a message body.
const (
	// HeaderBodyEncoding says how a payload SQS cannot carry as is
	// travels; absent, the body is the payload.
	HeaderBodyEncoding = "Boomerang-Body-Encoding"
	// BodyBase64: the body is the payload in standard base64, for a
	// payload that is not valid SQS text.
	BodyBase64 = "base64"
	// BodyEmpty: the payload is empty and the body is a single "-".
	BodyEmpty = "empty"
)

var (
	sqsQueueName = regexp.MustCompile(`^[A-Za-z0-9_-]+\.fifo$`)
	sqsRegion    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	// sqsHostRegion finds the region in an AWS queue URL's host.
	sqsHostRegion = regexp.MustCompile(`^(?:sqs\.)?([a-z]{2}(?:-[a-z]+)+-[0-9]+)\.(?:queue\.)?amazonaws\.com(?:\.cn)?$`)
)

// sqsEndpoint is a parsed SQS FIFO callback, one of
//
//	sqs://HOST[:PORT]/ACCOUNT/NAME.fifo[?region=R&tls=false]  a queue URL
//	sqs://REGION/NAME.fifo                                    a name and region
type sqsEndpoint struct {
	queueURL string // "" until resolved for the name form
	name     string
	region   string // "": the region of the standard AWS configuration
	base     string // "": AWS's endpoint for the region; else scheme://host[:port]
}

// client is the key of the SDK client an endpoint uses.
func (ep sqsEndpoint) client() string { return ep.base + " " + ep.region }

// host is where requests go, for the callback policy.
func (ep sqsEndpoint) host() string {
	if ep.base == "" {
		return "sqs." + ep.region + ".amazonaws.com"
	}
	u, _ := url.Parse(ep.base)
	return u.Hostname()
}

func parseSQSEndpoint(endpoint string) (sqsEndpoint, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return sqsEndpoint{}, fmt.Errorf("must be an sqs:// URL: %v", err)
	case u.Scheme != "sqs":
		return sqsEndpoint{}, fmt.Errorf("must be an sqs:// URL, got scheme %q", u.Scheme)
	case u.Hostname() == "":
		return sqsEndpoint{}, errors.New("must be sqs://HOST/ACCOUNT/NAME.fifo (a queue URL) or sqs://REGION/NAME.fifo")
	case u.User != nil:
		return sqsEndpoint{}, errors.New("must not hold credentials: they come from the server's AWS configuration")
	case u.Fragment != "":
		return sqsEndpoint{}, errors.New("must not have a fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return sqsEndpoint{}, fmt.Errorf("bad query: %v", err)
	}
	for key := range q {
		if key != "region" && key != "tls" {
			return sqsEndpoint{}, fmt.Errorf("unknown query parameter %q: want region or tls", key)
		}
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	ep := sqsEndpoint{name: parts[len(parts)-1], region: q.Get("region")}
	if len(ep.name) > sqsMaxQueueName || !sqsQueueName.MatchString(ep.name) {
		return sqsEndpoint{}, fmt.Errorf("queue %q must be a FIFO queue: a name ending in .fifo, at most %d letters, digits, - and _: a standard queue neither keeps group order nor drops a re-send", ep.name, sqsMaxQueueName)
	}
	if ep.region != "" && !sqsRegion.MatchString(ep.region) {
		return sqsEndpoint{}, fmt.Errorf("region %q is not an AWS region name", ep.region)
	}
	switch len(parts) {
	case 1: // sqs://REGION/NAME.fifo
		if u.Port() != "" || u.RawQuery != "" || !sqsRegion.MatchString(u.Host) {
			return sqsEndpoint{}, fmt.Errorf("sqs://REGION/NAME.fifo needs a region name, got %q; a queue URL is sqs://HOST/ACCOUNT/NAME.fifo", u.Host)
		}
		ep.region = u.Host
		return ep, nil
	case 2: // a queue URL
	default:
		return sqsEndpoint{}, errors.New("must be sqs://HOST/ACCOUNT/NAME.fifo (a queue URL) or sqs://REGION/NAME.fifo")
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return sqsEndpoint{}, err
		}
	}
	scheme := "https"
	switch q.Get("tls") {
	case "", "true":
	case "false":
		scheme = "http"
	default:
		return sqsEndpoint{}, fmt.Errorf("tls must be true or false, got %q", q.Get("tls"))
	}
	if ep.region == "" {
		if m := sqsHostRegion.FindStringSubmatch(u.Hostname()); m != nil {
			ep.region = m[1]
		}
	}
	ep.base = scheme + "://" + u.Host
	ep.queueURL = ep.base + u.Path
	return ep, nil
}

// sqsTransport sends each attempt to an SQS FIFO queue with the AWS SDK:
// SQS's answer that it stored the message is success. Attempts ready for
// one queue at the same time go out together in SendMessageBatch calls;
// a group never has two attempts under way (the scheduler's group gate),
// so a batch cannot reorder a group.
type sqsTransport struct {
	e       *Engine
	clients *brokers[*sqsClient]
}

func newSQSTransport(e *Engine) *sqsTransport {
	t := &sqsTransport{e: e}
	t.clients = newBrokers(e, t.dial)
	return t
}

// dial builds the SDK client for an endpoint and region: the standard
// AWS configuration (environment, shared files, instance roles) gives the
// credentials and, when the endpoint names none, the region. The SDK does
// not retry: the scheduler retries with the task's policy.
func (t *sqsTransport) dial(ctx context.Context, key string) (*sqsClient, error) {
	base, region, _ := strings.Cut(key, " ")
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set it in the callback (?region=) or the server's AWS configuration (AWS_REGION)")
	}
	tr := &http.Transport{
		Proxy:               nil, // like webhooks: straight to the endpoint, through the callback policy
		DialContext:         t.e.dialer().DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     t.e.cfg.IdleTimeout,
		ForceAttemptHTTP2:   true,
	}
	c := &sqsClient{tr: tr, queues: map[string]*sqsQueue{}}
	c.api = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: tr}
		if base != "" {
			o.BaseEndpoint = aws.String(base)
		}
	})
	return c, nil
}

func (t *sqsTransport) contextual() bool { return true }

func (t *sqsTransport) send(a *attempt) { go t.enqueue(a) }

func (t *sqsTransport) enqueue(a *attempt) {
	ep, err := parseSQSEndpoint(a.route.endpoint)
	if err != nil {
		a.finish(permanent(fmt.Errorf("%w: %v", ErrInvalidCallback, err)))
		return
	}
	entry, err := sqsEntry(a)
	if err != nil {
		a.finish(permanent(err))
		return
	}
	c, release, err := t.clients.acquire(a.ctx, ep.client(), a.begun)
	if err != nil {
		a.finish(err)
		return
	}
	defer release()
	q, err := c.queue(a.ctx, t.e, ep)
	if err != nil {
		a.finish(sqsError(a.ctx, err))
		return
	}
	a.finish(q.send(a, entry))
}

func (t *sqsTransport) sweep(cutoff time.Time) { t.clients.sweep(cutoff) }

func (t *sqsTransport) close() { t.clients.close() }

// sqsClient is an SDK client and the queues it sends to.
type sqsClient struct {
	api *sqs.Client
	tr  *http.Transport

	mu     sync.Mutex
	queues map[string]*sqsQueue // by endpoint
}

func (c *sqsClient) broken() bool { return false }
func (c *sqsClient) close()       { c.tr.CloseIdleConnections() }

// queue returns the batcher of ep's queue, resolving a queue name to its
// URL on first use.
func (c *sqsClient) queue(ctx context.Context, e *Engine, ep sqsEndpoint) (*sqsQueue, error) {
	key := ep.queueURL
	if key == "" {
		key = ep.name
	}
	c.mu.Lock()
	q := c.queues[key]
	c.mu.Unlock()
	if q != nil {
		return q, nil
	}
	if ep.queueURL == "" {
		out, err := c.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(ep.name)})
		if err != nil {
			return nil, err
		}
		ep.queueURL = aws.ToString(out.QueueUrl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q = c.queues[key]; q == nil {
		q = &sqsQueue{api: c.api, e: e, url: ep.queueURL}
		c.queues[key] = q
	}
	return q, nil
}

// sqsEntry builds an attempt's message. MessageGroupId is the task's
// group, or for a task without one its id, so ungrouped tasks are not
// held behind each other. MessageDeduplicationId is sinkMessageID, the
// same for every attempt of an occurrence: SQS drops a re-send within its
// five-minute deduplication window when an earlier attempt was stored
// but its answer lost, while the next occurrence of a recurring task (a
// new fire time) is a new message.
func sqsEntry(a *attempt) (types.SendMessageBatchRequestEntry, error) {
	t := a.task
	group := t.Group
	if group == "" {
		group = strconv.FormatUint(t.Id, 10)
	} else if err := checkSQSGroup(group); err != nil {
		return types.SendMessageBatchRequestEntry{}, err
	}
	attrs := map[string]types.MessageAttributeValue{}
	set := func(name, value string) {
		if value != "" { // SQS refuses empty attribute values
			attrs[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
		}
	}
	sinkHeaders(a, set)
	body := string(t.Payload)
	switch {
	case len(t.Payload) == 0:
		body = "-"
		set(HeaderBodyEncoding, BodyEmpty)
	case !sqsText(t.Payload):
		body = base64.StdEncoding.EncodeToString(t.Payload)
		set(HeaderBodyEncoding, BodyBase64)
	}
	return types.SendMessageBatchRequestEntry{
		MessageBody:            aws.String(body),
		MessageGroupId:         aws.String(group),
		MessageDeduplicationId: aws.String(sinkMessageID(t)),
		MessageAttributes:      attrs,
	}, nil
}

// checkSQSGroup accepts what SQS takes as a MessageGroupId: 1 to 128
// printable ASCII characters other than space.
func checkSQSGroup(g string) error {
	ok := len(g) <= sqsMaxGroupID
	for i := 0; ok && i < len(g); i++ {
		ok = g[i] > ' ' && g[i] < 0x7f
	}
	if !ok {
		return fmt.Errorf("%w: group %q cannot be an SQS MessageGroupId (1 to %d printable ASCII characters, no space)", ErrInvalidCallback, webhook.Escape(g), sqsMaxGroupID)
	}
	return nil
}

// sqsText reports whether b is a body SQS accepts as is: UTF-8 of the
// characters #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD and
// #x10000 to #x10FFFF.
func sqsText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		switch {
		case r == 0x9, r == 0xA, r == 0xD:
		case r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

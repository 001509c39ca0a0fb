package delivery

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// sqsQueueEnv names a real SQS FIFO queue's URL for make test-sqs; the
// standard AWS configuration gives the credentials and region.
const sqsQueueEnv = "BOOMERANG_TEST_SQS_FIFO_URL"

func sqsCallback(endpoint string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_SQS, Endpoint: endpoint}
}

// sqsTarget is the queue the suite sends to: the stand-in's, or the real
// one named by BOOMERANG_TEST_SQS_FIFO_URL.
type sqsTarget struct {
	endpoint string // the callback endpoint
	reader   *sqs.Client
	queueURL string
	// run tells this run's groups from earlier runs' on a real queue.
	run     string
	standIn *sqsStandIn // nil for a real queue
}

// newSQSTarget sets up the target; with the stand-in it also points the
// standard AWS configuration at test credentials.
func newSQSTarget(t testing.TB) *sqsTarget {
	t.Helper()
	queueURL := os.Getenv(sqsQueueEnv)
	var opts []func(*sqs.Options)
	var standIn *sqsStandIn
	if queueURL == "" {
		dir := t.TempDir()
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSTANDIN")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "standin")
		t.Setenv("AWS_SESSION_TOKEN", "")
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		standIn = newSQSStandIn(t)
		queueURL = standIn.queue("orders.fifo")
		opts = append(opts, func(o *sqs.Options) {
			o.BaseEndpoint = aws.String(strings.TrimSuffix(queueURL, "/000000000000/orders.fifo"))
		})
	}
	ep, err := parseSQSEndpoint(sqsEndpointOf(queueURL))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion(ep.region))
	if err != nil {
		t.Fatal(err)
	}
	return &sqsTarget{
		endpoint: sqsEndpointOf(queueURL), reader: sqs.NewFromConfig(cfg, opts...), queueURL: queueURL,
		run: rand.Text()[:8] + "-", standIn: standIn,
	}
}

// sqsEndpointOf is the callback endpoint of a queue URL.
func sqsEndpointOf(queueURL string) string {
	if rest, ok := strings.CutPrefix(queueURL, "http://"); ok {
		return "sqs://" + rest + "?tls=false&region=us-east-1"
	}
	return "sqs://" + strings.TrimPrefix(queueURL, "https://")
}

// receive reads and deletes messages of this run until it has n, in the
// order the queue hands them out.
func (q *sqsTarget) receive(t *testing.T, n int) []types.Message {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var got []types.Message
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("received %d messages, want %d", len(got), n)
		}
		out, err := q.reader.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := q.reader.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(attr(m, webhook.HeaderGroup), q.run) || strings.HasPrefix(string(payloadOf(t, m)), q.run) {
				got = append(got, m)
			}
		}
	}
	return got
}

func attr(m types.Message, name string) string {
	return aws.ToString(m.MessageAttributes[name].StringValue)
}

// payloadOf decodes a message's body as the docs tell consumers to.
func payloadOf(t *testing.T, m types.Message) []byte {
	switch attr(m, HeaderBodyEncoding) {
	case BodyEmpty:
		return nil
	case BodyBase64:
		b, err := base64.StdEncoding.DecodeString(aws.ToString(m.Body))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return []byte(aws.ToString(m.Body))
}

// TestSQSSuite runs against the stand-in, or with
// BOOMERANG_TEST_SQS_FIFO_URL (make test-sqs) against a real FIFO queue.
func TestSQSSuite(t *testing.T) {
	q := newSQSTarget(t)

	t.Run("group order and attributes", func(t *testing.T) {
		sys := newSystem(t, &storepb.Client{Id: "acme", Callback: sqsCallback(q.endpoint)})
		const groups, perGroup = 5, 10
		tasks := map[string]*storepb.Task{}
		for i := range perGroup {
			for g := range groups {
				tk := sys.register(scheduler.RegisterRequest{Group: q.run + "g" + strconv.Itoa(g), Payload: []byte(strconv.Itoa(i))})
				tasks[strconv.FormatUint(tk.Id, 10)] = tk
			}
		}
		nextOf := map[string]int{}
		for _, m := range q.receive(t, groups*perGroup) {
			tk := tasks[attr(m, webhook.HeaderTaskID)]
			if tk == nil {
				t.Fatalf("message of an unknown task: %v", m.MessageAttributes)
			}
			g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			dedup := m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]
			if g != tk.Group || attr(m, webhook.HeaderGroup) != tk.Group || dedup != sinkMessageID(tk) ||
				attr(m, webhook.HeaderAttempt) != "1" || attr(m, webhook.HeaderClient) != "acme" || attr(m, webhook.HeaderTerm) == "" {
				t.Fatalf("message group %q dedup %q attributes %v, for task %v", g, dedup, m.MessageAttributes, tk)
			}
			if want := strconv.Itoa(nextOf[g]); aws.ToString(m.Body) != want {
				t.Fatalf("group %s: got #%s, want #%s: not FIFO", g, aws.ToString(m.Body), want)
			}
			nextOf[g]++
		}
	})

	t.Run("ungrouped, empty and binary payloads", func(t *testing.T) {
		sys := newSystem(t, &storepb.Client{Id: "acme", Callback: sqsCallback(q.endpoint)})
		payloads := map[string][]byte{"text": []byte(q.run + "héllo"), "binary": append([]byte(q.run), 0, 0xff, 1), "empty": nil}
		byTask := map[string]string{}
		for name, p := range payloads {
			group := q.run + name
			if name == "text" {
				group = "" // ungrouped: its own id is the message group
			}
			tk := sys.register(scheduler.RegisterRequest{Group: group, Payload: p})
			byTask[strconv.FormatUint(tk.Id, 10)] = name
		}
		for _, m := range q.receive(t, len(payloads)) {
			id := attr(m, webhook.HeaderTaskID)
			name := byTask[id]
			if got := payloadOf(t, m); string(got) != string(payloads[name]) {
				t.Errorf("%s: payload %q, want %q", name, got, payloads[name])
			}
			if g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]; name == "text" && g != id {
				t.Errorf("ungrouped task %s went to group %q", id, g)
			}
		}
	})

	t.Run("a message SQS cannot take goes to the dead letters at once", func(t *testing.T) {
		sys := newSystem(t, &storepb.Client{Id: "acme", Callback: sqsCallback(q.endpoint)})
		sys.register(scheduler.RegisterRequest{Group: q.run + "has space", Payload: []byte("x")})
		sys.register(scheduler.RegisterRequest{Group: q.run + "big", Payload: []byte(strings.Repeat("x", 1<<20))})
		for _, dl := range sys.deadLetters(2) {
			want := "MessageGroupId" // refused before sending
			if strings.HasSuffix(dl.Task.Group, "big") {
				want = "SQS " // SQS's own validation error, whichever code it gives
			}
			if dl.Attempts != 1 || !strings.Contains(dl.LastError, want) {
				t.Errorf("group %q: dead letter after %d attempts: %q, want 1 attempt and %q", dl.Task.Group, dl.Attempts, dl.LastError, want)
			}
		}
	})
}

func TestValidateSQSCallbacks(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		valid    bool
	}{
		{"sqs://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", true},
		{"sqs://eu-west-1/orders.fifo", true},
		{"sqs://127.0.0.1:9324/000000000000/orders.fifo?tls=false&region=us-east-1", true},
		{"sqs://sqs.eu-west-1.amazonaws.com/123456789012/orders", false}, // a standard queue
		{"sqs://eu-west-1/orders", false},
		{"sqs://eu-west-1/orders.fifo?region=us-east-1", false},
		{"sqs://not_a_region/orders.fifo", false},
		{"sqs://h/1/orders.fifo?tls=maybe", false},
		{"sqs://h/1/orders.fifo?queue=x", false},
		{"sqs://key:secret@h/1/orders.fifo", false},
		{"sqs://h/1/2/orders.fifo", false},
		{"sqs://h/1/" + strings.Repeat("q", 80) + ".fifo", false},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", false},
	} {
		err := ValidateCallback(sqsCallback(tc.endpoint), 0)
		if (err == nil) != tc.valid {
			t.Errorf("ValidateCallback(%q) = %v, want valid %v", tc.endpoint, err, tc.valid)
		}
	}
	ep, _ := parseSQSEndpoint("sqs://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo")
	if ep.region != "eu-west-1" || ep.queueURL != "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo" {
		t.Errorf("parsed %+v", ep)
	}
}

// TestSQSFaults injects what only the stand-in can: throttling, server
// errors, answers too slow and answers lost.
func TestSQSFaults(t *testing.T) {
	t.Setenv(sqsQueueEnv, "")
	q := newSQSTarget(t)
	cb := sqsCallback(q.endpoint)
	// Long enough that only the stalled answer times out, even on a
	// loaded machine: an attempt timed out otherwise is one too many.
	cb.TimeoutMs = 2000
	for _, tc := range []struct {
		name     string
		faults   []standInFault
		attempts int
		errText  string
	}{
		{"throttled twice", []standInFault{throttle, throttle}, 3, "RequestThrottled"},
		{"a server error", []standInFault{fail5xx}, 2, "InternalError"},
		{"an answer too slow", []standInFault{stall}, 2, "timed out"},
		// Stored, answer lost: the re-send carries the same
		// deduplication id and SQS drops it.
		{"an answer lost", []standInFault{loseReply}, 2, "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newEngine(t, cb, nil)
			tk := task(q.run + tc.name)
			q.standIn.inject(tc.faults...)
			before := len(q.standIn.stored(q.queueURL))
			var errs []string
			for attempt := 1; ; attempt++ {
				err := deliver(e, tk, attempt).wait(t)
				if err == nil {
					break
				}
				if IsPermanent(err) || attempt == tc.attempts {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				errs = append(errs, err.Error())
			}
			if len(errs) != tc.attempts-1 || !strings.Contains(errs[0], tc.errText) {
				t.Errorf("failed attempts %q, want %d with %q", errs, tc.attempts-1, tc.errText)
			}
			if got := q.standIn.stored(q.queueURL)[before:]; len(got) != 1 || got[0].Body != q.run+tc.name {
				t.Fatalf("stored %v, want the message once", got)
			}
		})
	}
}

// Attempts ready for one queue at the same time share SendMessageBatch
// calls, and each gets its own outcome.
func TestSQSBatches(t *testing.T) {
	t.Setenv(sqsQueueEnv, "")
	q := newSQSTarget(t)
	e, _ := newEngine(t, sqsCallback(q.endpoint), nil)
	const n = 200
	q.standIn.mu.Lock()
	q.standIn.refuse = strconv.Itoa(n - 1)
	q.standIn.mu.Unlock()
	outs := make([]outcome, n)
	for i := range outs {
		tk := task(strconv.Itoa(i))
		tk.Group = "g" + strconv.Itoa(i)
		outs[i] = deliver(e, tk, 1)
	}
	for i, o := range outs {
		// The last is refused alone, in whatever batch it travels.
		err := o.wait(t)
		if (err != nil) != (i == n-1) || (err != nil && !IsPermanent(err)) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if got := len(q.standIn.stored(q.queueURL)); got != n-1 {
		t.Fatalf("stored %d messages, want %d", got, n-1)
	}
	batched := 0
	for _, r := range q.standIn.sends() {
		if r.entries > 1 {
			batched += r.entries
		}
	}
	if batched == 0 {
		t.Fatalf("no batch among %d send requests for %d messages", len(q.standIn.sends()), n-1)
	}
	t.Logf("%d send requests for %d messages, %d messages in batches", len(q.standIn.sends()), n-1, batched)
}

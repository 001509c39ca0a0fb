package delivery

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sqsStandIn is a stand-in for SQS FIFO queues: a server of the AWS JSON
// 1.0 protocol the SDK speaks, for SendMessage, SendMessageBatch,
// GetQueueUrl, ReceiveMessage and DeleteMessage. It checks what a FIFO
// queue requires (a group id and a deduplication id on every message, a
// body SQS accepts, at most 10 attributes, none empty, at most 10 entries
// in a batch), drops a message whose deduplication id it stored in the
// last five minutes as SQS does, records every request, and can be told
// to throttle, fail with a 5xx, answer slowly or lose its answer. It is
// not SQS: make test-sqs runs the same suite against a real queue.
type sqsStandIn struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	queues   map[string]*standInQueue // by URL
	requests []standInRequest
	faults   []standInFault // the next send requests' fates, in order
	refuse   string         // a body refused as invalid, alone or in a batch
	seq      int
}

type standInRequest struct {
	op      string
	entries int // messages in a send request
}

// standInFault is what the stand-in does to a send request.
type standInFault int

const (
	answerIt  standInFault = iota
	throttle               // 400 RequestThrottled, nothing stored
	fail5xx                // 500 InternalError, nothing stored
	stall                  // no answer until the client gives up, nothing stored
	loseReply              // stored, then the connection closes unanswered
)

type standInQueue struct {
	msgs     []*standInMsg
	received int                  // messages ReceiveMessage has handed out
	dedup    map[string]time.Time // deduplication id: when stored
	ids      map[string]string    // deduplication id: message id
}

type standInMsg struct {
	ID, Body, Group, Dedup, Seq string
	Attrs                       map[string]standInAttr
}

type standInAttr struct {
	DataType    string
	StringValue string `json:",omitempty"`
}

// standInMaxMessage is SQS's limit on a message (body and attributes)
// and on a batch's messages together.
const standInMaxMessage = 1 << 20

func newSQSStandIn(t testing.TB) *sqsStandIn {
	s := &sqsStandIn{t: t, queues: map[string]*standInQueue{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// queue creates a FIFO queue and returns its URL.
func (s *sqsStandIn) queue(name string) string {
	u := s.srv.URL + "/000000000000/" + name
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[u] = &standInQueue{dedup: map[string]time.Time{}, ids: map[string]string{}}
	return u
}

// inject sets the fates of the next send requests.
func (s *sqsStandIn) inject(f ...standInFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// stored is the messages a queue holds.
func (s *sqsStandIn) stored(url string) []*standInMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*standInMsg(nil), s.queues[url].msgs...)
}

func (s *sqsStandIn) sends() []standInRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []standInRequest
	for _, r := range s.requests {
		if r.entries > 0 {
			out = append(out, r)
		}
	}
	return out
}

type sqsAPIError struct {
	status        int
	code, message string
}

func (s *sqsStandIn) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AmazonSQS.")
	switch {
	case r.Method != http.MethodPost || !ok:
		s.fail(w, sqsAPIError{400, "InvalidAction", "not an SQS JSON request: " + target})
		return
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.0":
		s.fail(w, sqsAPIError{400, "InvalidParameterValue", "content type " + r.Header.Get("Content-Type")})
		return
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "):
		s.fail(w, sqsAPIError{403, "MissingAuthenticationToken", "the request is not signed"})
		return
	}
	var in map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		s.fail(w, sqsAPIError{400, "InvalidParameterValue", "bad JSON: " + err.Error()})
		return
	}
	fault := s.record(op, in)
	switch fault {
	case throttle:
		s.fail(w, sqsAPIError{400, "RequestThrottled", "slow down"})
		return
	case fail5xx:
		s.fail(w, sqsAPIError{500, "InternalError", "try again"})
		return
	case stall:
		<-r.Context().Done()
		return
	}
	out, apiErr := s.do(op, in)
	if apiErr != nil {
		s.fail(w, *apiErr)
		return
	}
	if fault == loseReply {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			s.t.Errorf("stand-in: hijack: %v", err)
			return
		}
		_ = conn.Close()
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

// record notes a request and returns its fate.
func (s *sqsStandIn) record(op string, in map[string]json.RawMessage) standInFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := standInRequest{op: op}
	switch op {
	case "SendMessage":
		req.entries = 1
	case "SendMessageBatch":
		var entries []json.RawMessage
		_ = json.Unmarshal(in["Entries"], &entries)
		req.entries = len(entries)
	}
	s.requests = append(s.requests, req)
	if req.entries == 0 || len(s.faults) == 0 {
		return answerIt
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f
}

func (s *sqsStandIn) fail(w http.ResponseWriter, e sqsAPIError) {
	fault := "Sender"
	if e.status >= 500 {
		fault = "Receiver"
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", e.code+";"+fault)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + e.code, "message": e.message})
}

// sendInput is a SendMessage request or a SendMessageBatch entry.
type sendInput struct {
	ID                     string `json:"Id"`
	QueueURL               string `json:"QueueUrl"`
	MessageBody            string
	MessageGroupID         string `json:"MessageGroupId"`
	MessageDeduplicationID string `json:"MessageDeduplicationId"`
	MessageAttributes      map[string]standInAttr
}

func (s *sqsStandIn) do(op string, in map[string]json.RawMessage) (any, *sqsAPIError) {
	var queueURL, name string
	_ = json.Unmarshal(in["QueueUrl"], &queueURL)
	_ = json.Unmarshal(in["QueueName"], &name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if op == "GetQueueUrl" {
		queueURL = s.srv.URL + "/000000000000/" + name
	}
	q := s.queues[queueURL]
	if q == nil {
		return nil, &sqsAPIError{400, "AWS.SimpleQueueService.NonExistentQueue", "no queue " + queueURL + name}
	}
	switch op {
	case "GetQueueUrl":
		return map[string]string{"QueueUrl": queueURL}, nil
	case "SendMessage":
		var m sendInput
		_ = json.Unmarshal(mustJSON(in), &m)
		if err := s.check(m); err != nil {
			return nil, err
		}
		return s.store(q, m), nil
	case "SendMessageBatch":
		return s.sendBatch(q, in)
	case "ReceiveMessage":
		return s.receive(q, in), nil
	case "DeleteMessage":
		return map[string]string{}, nil
	}
	return nil, &sqsAPIError{400, "InvalidAction", "the stand-in does not serve " + op}
}

func (s *sqsStandIn) sendBatch(q *standInQueue, in map[string]json.RawMessage) (any, *sqsAPIError) {
	var entries []sendInput
	_ = json.Unmarshal(in["Entries"], &entries)
	switch {
	case len(entries) == 0:
		return nil, &sqsAPIError{400, "AWS.SimpleQueueService.EmptyBatchRequest", "no entries"}
	case len(entries) > 10:
		return nil, &sqsAPIError{400, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "over 10 entries"}
	}
	total, ids := 0, map[string]bool{}
	for _, e := range entries {
		total += standInSize(e)
		if ids[e.ID] {
			return nil, &sqsAPIError{400, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "id " + e.ID + " twice"}
		}
		ids[e.ID] = true
	}
	if total > standInMaxMessage {
		return nil, &sqsAPIError{400, "AWS.SimpleQueueService.BatchRequestTooLong", "batch too long"}
	}
	var ok, failed []map[string]any
	for _, e := range entries {
		if err := s.check(e); err != nil {
			failed = append(failed, map[string]any{"Id": e.ID, "SenderFault": true, "Code": err.code, "Message": err.message})
			continue
		}
		out := s.store(q, e)
		out["Id"] = e.ID
		ok = append(ok, out)
	}
	return map[string]any{"Successful": ok, "Failed": failed}, nil
}

// check checks a message as a FIFO queue does, and refuses the body the
// test asked it to.
func (s *sqsStandIn) check(m sendInput) *sqsAPIError {
	if s.refuse != "" && m.MessageBody == s.refuse {
		return &sqsAPIError{400, "InvalidParameterValue", "refused by the test"}
	}
	return checkStandInMessage(m)
}

// checkStandInMessage checks a message as a FIFO queue does.
func checkStandInMessage(m sendInput) *sqsAPIError {
	bad := func(format string, args ...any) *sqsAPIError {
		return &sqsAPIError{400, "InvalidParameterValue", fmt.Sprintf(format, args...)}
	}
	switch {
	case m.MessageGroupID == "":
		return &sqsAPIError{400, "MissingParameter", "The request must contain the parameter MessageGroupId."}
	case m.MessageDeduplicationID == "":
		return bad("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	case checkSQSGroup(m.MessageGroupID) != nil || checkSQSGroup(m.MessageDeduplicationID) != nil:
		return bad("Value %q for parameter MessageGroupId or MessageDeduplicationId is invalid", m.MessageGroupID)
	case m.MessageBody == "" || !sqsText([]byte(m.MessageBody)):
		return &sqsAPIError{400, "InvalidMessageContents", "Invalid binary character in message body"}
	case len(m.MessageAttributes) > 10:
		return bad("Number of message attributes [%d] exceeds the allowed maximum [10].", len(m.MessageAttributes))
	case standInSize(m) > standInMaxMessage:
		return bad("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", standInMaxMessage)
	}
	for name, a := range m.MessageAttributes {
		if a.DataType != "String" || a.StringValue == "" {
			return bad("Message attribute %q must be a non-empty String", name)
		}
	}
	return nil
}

func standInSize(m sendInput) int {
	n := len(m.MessageBody)
	for name, a := range m.MessageAttributes {
		n += len(name) + len(a.DataType) + len(a.StringValue)
	}
	return n
}

// store keeps m unless its deduplication id was stored in the last five
// minutes; either way it answers as SQS does, with the stored message's
// id.
func (s *sqsStandIn) store(q *standInQueue, m sendInput) map[string]any {
	sum := md5.Sum([]byte(m.MessageBody))
	out := map[string]any{"MD5OfMessageBody": hex.EncodeToString(sum[:])}
	if at, dup := q.dedup[m.MessageDeduplicationID]; dup && time.Since(at) < 5*time.Minute {
		out["MessageId"] = q.ids[m.MessageDeduplicationID]
		out["SequenceNumber"] = "0"
		return out
	}
	s.seq++
	msg := &standInMsg{
		ID: "m" + strconv.Itoa(s.seq), Body: m.MessageBody, Group: m.MessageGroupID,
		Dedup: m.MessageDeduplicationID, Seq: strconv.Itoa(s.seq), Attrs: m.MessageAttributes,
	}
	q.msgs = append(q.msgs, msg)
	q.dedup[msg.Dedup] = time.Now()
	q.ids[msg.Dedup] = msg.ID
	out["MessageId"], out["SequenceNumber"] = msg.ID, msg.Seq
	return out
}

// receive hands out stored messages in the order they were stored.
func (s *sqsStandIn) receive(q *standInQueue, in map[string]json.RawMessage) map[string]any {
	n := 1
	_ = json.Unmarshal(in["MaxNumberOfMessages"], &n)
	var msgs []map[string]any
	for ; q.received < len(q.msgs) && len(msgs) < n; q.received++ {
		m := q.msgs[q.received]
		sum := md5.Sum([]byte(m.Body))
		msgs = append(msgs, map[string]any{
			"MessageId": m.ID, "ReceiptHandle": m.ID, "Body": m.Body, "MD5OfBody": hex.EncodeToString(sum[:]),
			"Attributes":        map[string]string{"MessageGroupId": m.Group, "MessageDeduplicationId": m.Dedup, "SequenceNumber": m.Seq},
			"MessageAttributes": m.Attrs,
		})
	}
	return map[string]any{"Messages": msgs}
}

func mustJSON(in map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(in)
	return b
}

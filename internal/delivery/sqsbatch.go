package delivery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/boomerangd/boomerang/internal/egress"
)

// sqsRequests bounds the requests under way to one queue; attempts that
// come while all are busy wait and go out together in the next batch.
const sqsRequests = 16

// sqsQueue sends one queue's messages, batching attempts that wait.
type sqsQueue struct {
	api *sqs.Client
	e   *Engine
	url string

	mu      sync.Mutex
	waiting []*sqsWait
	busy    int // requests under way
}

type sqsWait struct {
	a      *attempt
	entry  types.SendMessageBatchRequestEntry
	size   int
	result chan error // buffered
}

// send queues a's message and waits for its outcome.
func (q *sqsQueue) send(a *attempt, entry types.SendMessageBatchRequestEntry) error {
	w := &sqsWait{a: a, entry: entry, size: sqsSize(entry), result: make(chan error, 1)}
	q.mu.Lock()
	q.waiting = append(q.waiting, w)
	var batch []*sqsWait
	if q.busy < sqsRequests {
		q.busy++
		batch = q.take()
	}
	q.mu.Unlock()
	if batch != nil {
		go q.run(batch)
	}
	select {
	case err := <-w.result:
		return err
	case <-a.ctx.Done():
		return ErrClosed // the attempt has ended
	}
}

// take removes the next batch from the waiting attempts: up to
// sqsMaxBatch of them within sqsMaxBatchBytes, skipping those that have
// ended. Called with mu held.
func (q *sqsQueue) take() []*sqsWait {
	var batch []*sqsWait
	bytes, n := 0, 0
	for _, w := range q.waiting {
		if w.a.over() {
			n++
			continue
		}
		if len(batch) == sqsMaxBatch || (len(batch) > 0 && bytes+w.size > sqsMaxBatchBytes) {
			break
		}
		batch = append(batch, w)
		bytes += w.size
		n++
	}
	q.waiting = q.waiting[n:]
	return batch
}

// run sends batches until nobody waits.
func (q *sqsQueue) run(batch []*sqsWait) {
	for len(batch) > 0 {
		q.sendBatch(batch)
		q.mu.Lock()
		batch = q.take()
		if len(batch) == 0 {
			q.busy--
		}
		q.mu.Unlock()
	}
}

// sendBatch sends one message with SendMessage, several with
// SendMessageBatch, and hands each attempt its outcome.
func (q *sqsQueue) sendBatch(batch []*sqsWait) {
	timeout := time.Duration(0)
	for _, w := range batch {
		timeout = max(timeout, w.a.route.timeout)
	}
	ctx, cancel := context.WithTimeout(q.e.ctx, timeout)
	defer cancel()
	if len(batch) == 1 {
		e := batch[0].entry
		_, err := q.api.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(q.url), MessageBody: e.MessageBody, MessageGroupId: e.MessageGroupId,
			MessageDeduplicationId: e.MessageDeduplicationId, MessageAttributes: e.MessageAttributes,
		})
		batch[0].result <- sqsError(ctx, err)
		return
	}
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url)}
	for i, w := range batch {
		w.entry.Id = aws.String(strconv.Itoa(i))
		in.Entries = append(in.Entries, w.entry)
	}
	out, err := q.api.SendMessageBatch(ctx, in)
	if err != nil {
		err = sqsError(ctx, err)
		for _, w := range batch {
			w.result <- err
		}
		return
	}
	results := make(map[string]error, len(batch))
	for _, s := range out.Successful {
		results[aws.ToString(s.Id)] = nil
	}
	for _, f := range out.Failed {
		results[aws.ToString(f.Id)] = sqsFailure(aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault, 0)
	}
	for i, w := range batch {
		err, ok := results[strconv.Itoa(i)]
		if !ok {
			err = fmt.Errorf("%w: SQS: the batch answer does not mention the message", ErrRejected)
		}
		w.result <- err
	}
}

// sqsSize is the size SQS counts for a message: its body and its
// attributes' names, types and values.
func sqsSize(e types.SendMessageBatchRequestEntry) int {
	n := len(aws.ToString(e.MessageBody))
	for name, v := range e.MessageAttributes {
		n += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// sqsError classifies a request's outcome.
func sqsError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: SQS did not answer in time", ErrTimeout)
	}
	if errors.Is(err, egress.ErrDenied) {
		return dialError(err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		status := 0
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			status = re.HTTPStatusCode()
		}
		return sqsFailure(apiErr.ErrorCode(), apiErr.ErrorMessage(), apiErr.ErrorFault() == smithy.FaultClient, status)
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		return fmt.Errorf("%w: SQS: HTTP %d", ErrRejected, re.HTTPStatusCode())
	}
	// No answer: the request may or may not have been stored; the
	// re-send's deduplication id makes that safe.
	return fmt.Errorf("%w: SQS: %s", ErrUnreachable, safeText(err.Error()))
}

// sqsValidation are the error codes that say the message itself is
// wrong: no retry can fix it, so the occurrence goes to the dead letter
// queue at once.
var sqsValidation = map[string]bool{
	"InvalidParameterValue":       true,
	"InvalidMessageContents":      true,
	"MissingParameter":            true,
	"InvalidAttributeName":        true,
	"InvalidAttributeValue":       true,
	"InvalidParameterCombination": true,
	"MessageTooLong":              true,
	"ValidationError":             true,
}

// sqsFailure classifies an error SQS answered. Validation errors are
// permanent; throttling, server errors and every other refusal (a queue
// that does not exist yet, missing permissions, a KMS key) are retried
// with backoff, since they may pass.
func sqsFailure(code, message string, senderFault bool, status int) error {
	err := fmt.Errorf("%w: SQS %s: %s", ErrRejected, safeText(code), safeText(message))
	if sqsValidation[code] && senderFault && status < 500 {
		return permanent(err)
	}
	return err
}

package delivery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// amqpChannels is the number of AMQP channels each connection publishes
// on, taking turns; the broker serves one channel at a time.
const amqpChannels = 4

// amqpTransport publishes each attempt to a RabbitMQ exchange (AMQP
// 0-9-1) with publisher confirms: an attempt succeeds when the broker
// confirms the message, which for a persistent message on a durable queue
// means it is written. Messages are mandatory, so one that no queue takes
// is returned and its attempt fails instead of vanishing.
type amqpTransport struct {
	e     *Engine
	conns *brokers[*amqpConn]
}

func newAMQPTransport(e *Engine) *amqpTransport {
	t := &amqpTransport{e: e}
	t.conns = newBrokers(e, t.dial)
	return t
}

func (t *amqpTransport) dial(_ context.Context, uri string) (*amqpConn, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("boomerang")
	conn, err := amqp.DialConfig(uri, amqp.Config{
		Dial:       brokerDialer{e: t.e}.Dial,
		Properties: props,
	})
	if err != nil {
		return nil, err
	}
	return &amqpConn{conn: conn}, nil
}

func (t *amqpTransport) contextual() bool { return true }

func (t *amqpTransport) send(a *attempt) { go t.publish(a) }

func (t *amqpTransport) publish(a *attempt) {
	ep, err := parseAMQPEndpoint(a.route.endpoint)
	if err != nil {
		a.finish(permanent(fmt.Errorf("%w: %v", ErrInvalidCallback, err)))
		return
	}
	key := withGroup(ep.routingKey, a.task)
	if len(key) > maxRoutingKeyLen {
		a.finish(permanent(fmt.Errorf("%w: routing key with the group is over %d bytes", ErrInvalidCallback, maxRoutingKeyLen)))
		return
	}
	c, release, err := t.conns.acquire(a.ctx, ep.uri, a.begun)
	if err != nil {
		a.finish(err)
		return
	}
	defer release()
	ch, err := c.channel()
	if err != nil {
		a.finish(fmt.Errorf("%w: opening an AMQP channel: %w", ErrUnreachable, err))
		return
	}
	msg := amqp.Publishing{
		Headers:      amqp.Table{},
		ContentType:  "application/octet-stream",
		DeliveryMode: amqp.Persistent,
		MessageId:    sinkMessageID(a.task),
		Timestamp:    a.begun,
		AppId:        "boomerang",
		Body:         a.task.Payload,
	}
	sinkHeaders(a, func(name, value string) { msg.Headers[name] = value })
	w, err := ch.publish(a.ctx, ep.exchange, key, msg)
	if err != nil {
		a.finish(amqpError(a, err))
		return
	}
	select {
	case err = <-w:
		a.finish(err)
	case <-a.ctx.Done():
		// Ended by its timeout or by Close; the confirm, if it comes,
		// finds nobody waiting.
	}
}

func amqpError(a *attempt, err error) error {
	if a.ctx.Err() != nil {
		return ErrClosed // the attempt has already ended
	}
	return amqpFailure(err)
}

// amqpFailure classifies a failed publish: an exception the broker raised
// (an exchange that does not exist, access refused) is a rejection worth
// retrying, since the broker may be set up meanwhile; anything else means
// the broker could not be reached.
func amqpFailure(err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Server {
		return fmt.Errorf("%w: AMQP %d: %s", ErrRejected, ae.Code, safeText(ae.Reason))
	}
	return fmt.Errorf("%w: AMQP: %w", ErrUnreachable, err)
}

func (t *amqpTransport) sweep(cutoff time.Time) { t.conns.sweep(cutoff) }

func (t *amqpTransport) close() { t.conns.close() }

// amqpConn is a connection and its publishing channels, opened on first
// use and again after the broker closes one (as it does when a message
// names an exchange that does not exist).
type amqpConn struct {
	conn *amqp.Connection
	next atomic.Uint32

	mu    sync.Mutex
	chans [amqpChannels]*amqpChannel
}

func (c *amqpConn) broken() bool { return c.conn.IsClosed() }
func (c *amqpConn) close()       { _ = c.conn.Close() }

// channel returns the next channel in turn, opening it if needed.
func (c *amqpConn) channel() (*amqpChannel, error) {
	i := c.next.Add(1) % amqpChannels
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.chans[i]; ch != nil && !ch.ch.IsClosed() {
		return ch, nil
	}
	ch, err := openAMQPChannel(c.conn)
	if err != nil {
		return nil, err
	}
	c.chans[i] = ch
	return ch, nil
}

// amqpChannel is a channel in confirm mode. One goroutine reads its
// returns and confirms, in the order the broker sent them: a mandatory
// message that no queue took is returned before it is confirmed, so by
// the time its confirm is read the return has been seen.
type amqpChannel struct {
	ch *amqp.Channel

	pub sync.Mutex // orders publishes, so each knows its delivery tag

	mu    sync.Mutex
	waits map[uint64]*amqpWait // by delivery tag
}

type amqpWait struct {
	messageID string
	result    chan error // buffered: the waiter may have gone
}

func openAMQPChannel(conn *amqp.Connection) (*amqpChannel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	c := &amqpChannel{ch: ch, waits: map[uint64]*amqpWait{}}
	// Unbuffered: the reader hands over each return before it can hand
	// over the confirm that follows it.
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation))
	returns := ch.NotifyReturn(make(chan amqp.Return))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go c.read(confirms, returns, closes)
	return c, nil
}

// publish sends msg and returns where its outcome will arrive.
func (c *amqpChannel) publish(ctx context.Context, exchange, key string, msg amqp.Publishing) (<-chan error, error) {
	w := &amqpWait{messageID: msg.MessageId, result: make(chan error, 1)}
	c.pub.Lock()
	defer c.pub.Unlock()
	tag := c.ch.GetNextPublishSeqNo()
	c.mu.Lock()
	c.waits[tag] = w
	c.mu.Unlock()
	if err := c.ch.PublishWithContext(ctx, exchange, key, true, false, msg); err != nil {
		c.mu.Lock()
		delete(c.waits, tag)
		c.mu.Unlock()
		return nil, err
	}
	return w.result, nil
}

func (c *amqpChannel) read(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	returned := map[string]amqp.Return{} // by message id, until confirmed
	for confirms != nil || returns != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			returned[r.MessageId] = r
		case cf, ok := <-confirms:
			if !ok {
				confirms = nil
				continue
			}
			c.mu.Lock()
			w := c.waits[cf.DeliveryTag]
			delete(c.waits, cf.DeliveryTag)
			c.mu.Unlock()
			if w == nil {
				continue
			}
			r, wasReturned := returned[w.messageID]
			delete(returned, w.messageID)
			switch {
			case !cf.Ack:
				w.result <- fmt.Errorf("%w: the broker refused the message (nack)", ErrRejected)
			case wasReturned:
				w.result <- fmt.Errorf("%w: no queue took the message: AMQP %d %s", ErrRejected, r.ReplyCode, r.ReplyText)
			default:
				w.result <- nil
			}
		}
	}
	err := errors.New("AMQP channel closed")
	if ae := <-closes; ae != nil {
		err = ae
	}
	c.mu.Lock()
	waits := c.waits
	c.waits = map[uint64]*amqpWait{}
	c.mu.Unlock()
	for _, w := range waits {
		w.result <- amqpFailure(err)
	}
}

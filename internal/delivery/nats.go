package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsTransport publishes each attempt to a NATS JetStream subject and
// waits for the stream's acknowledgement: the message is stored. One
// connection per server carries every publish; the message id header
// (Nats-Msg-Id, sinkMessageID) lets the stream drop a repeat of an
// occurrence within its duplicate window.
type natsTransport struct {
	e     *Engine
	conns *brokers[*natsConn]
}

type natsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func (c *natsConn) broken() bool { return c.nc.IsClosed() }
func (c *natsConn) close()       { c.nc.Close() }

func newNATSTransport(e *Engine) *natsTransport {
	t := &natsTransport{e: e}
	t.conns = newBrokers(e, t.dial)
	return t
}

func (t *natsTransport) dial(_ context.Context, server string) (*natsConn, error) {
	nc, err := nats.Connect(server,
		nats.Name("boomerang"),
		nats.Timeout(t.e.cfg.DefaultTimeout),
		// While reconnecting, publishes fail at once and are retried by
		// the scheduler, rather than wait in a buffer nobody bounds.
		nats.ReconnectBufSize(-1),
		nats.MaxReconnects(-1),
		nats.NoCallbacksAfterClientClose(),
		nats.SetCustomDialer(brokerDialer{e: t.e}),
	)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsConn{nc: nc, js: js}, nil
}

func (t *natsTransport) contextual() bool { return true }

func (t *natsTransport) send(a *attempt) { go t.publish(a) }

func (t *natsTransport) publish(a *attempt) {
	ep, err := parseNATSEndpoint(a.route.endpoint)
	if err != nil {
		a.finish(permanent(fmt.Errorf("%w: %v", ErrInvalidCallback, err)))
		return
	}
	subject := withGroup(ep.subject, a.task)
	if err := checkSubject(subject); err != nil {
		a.finish(permanent(fmt.Errorf("%w: the group does not fit the subject: %v", ErrInvalidCallback, err)))
		return
	}
	c, release, err := t.conns.acquire(a.ctx, ep.server, a.begun)
	if err != nil {
		a.finish(err)
		return
	}
	defer release()
	msg := &nats.Msg{Subject: subject, Data: a.task.Payload, Header: nats.Header{}}
	sinkHeaders(a, msg.Header.Set)
	// No retries inside the client: the scheduler retries with the
	// task's policy.
	_, err = c.js.PublishMsg(a.ctx, msg, jetstream.WithMsgID(sinkMessageID(a.task)), jetstream.WithRetryAttempts(0))
	a.finish(natsError(a, subject, err))
}

// natsError classifies a publish's outcome. A subject no stream listens
// on, and a stream that refuses the message (full, sealed, too big), are
// rejections worth retrying: the stream may be created or drained.
func natsError(a *attempt, subject string, err error) error {
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case a.ctx.Err() != nil:
		return ErrClosed // the attempt has already ended
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return fmt.Errorf("%w: no JetStream stream stores subject %q", ErrRejected, subject)
	case errors.As(err, &apiErr):
		return fmt.Errorf("%w: JetStream: %s", ErrRejected, safeText(apiErr.Description))
	}
	return fmt.Errorf("%w: NATS: %w", ErrUnreachable, err)
}

func (t *natsTransport) sweep(cutoff time.Time) { t.conns.sweep(cutoff) }

func (t *natsTransport) close() { t.conns.close() }

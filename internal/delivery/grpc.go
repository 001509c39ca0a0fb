package delivery

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/boomerangd/boomerang/internal/egress"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
)

// grpcTransport calls boomerang.v1.CallbackService/Deliver with the gRPC
// protocol over cleartext HTTP/2. One HTTP/2 connection per endpoint
// carries every concurrent call (the transport opens more when the
// receiver's stream limit is reached).
type grpcTransport struct {
	e  *Engine
	tr *http.Transport
	hc *http.Client

	mu      sync.Mutex
	clients map[string]*grpcClient // by endpoint
}

type grpcClient struct {
	client   boomerangv1connect.CallbackServiceClient
	lastUsed time.Time
}

func newGRPCTransport(e *Engine) *grpcTransport {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		Protocols:       &protocols,
		Proxy:           nil,
		DialContext:     e.dialer().DialContext,
		IdleConnTimeout: e.cfg.IdleTimeout,
		// One connection to a receiver at a time is being dialed (for
		// HTTP/2 this bounds dials, not connections): a burst of calls
		// to a new receiver waits for it and shares it, instead of
		// dialing one each.
		MaxConnsPerHost: 1,
	}
	return &grpcTransport{e: e, tr: tr, hc: &http.Client{Transport: tr}, clients: map[string]*grpcClient{}}
}

func (t *grpcTransport) contextual() bool { return true }

func (t *grpcTransport) send(a *attempt) { go t.call(a) }

func (t *grpcTransport) call(a *attempt) {
	m := &boomerangv1.Delivery{}
	a.message(m, a.begun.UnixMilli())
	resp, err := t.client(a.route.endpoint, a.begun).Deliver(a.ctx, connect.NewRequest(m))
	if err != nil {
		a.finish(grpcError(a, err))
		return
	}
	if ack := resp.Msg; !ack.GetOk() {
		a.finish(fmt.Errorf("%w: ack not ok: %s", ErrRejected, safeText(ack.GetError())))
		return
	}
	a.finish(nil)
}

func (t *grpcTransport) client(endpoint string, now time.Time) boomerangv1connect.CallbackServiceClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.clients[endpoint]
	if c == nil {
		c = &grpcClient{client: boomerangv1connect.NewCallbackServiceClient(t.hc, "http://"+endpoint, connect.WithGRPC(),
			// An Ack is a few bytes: compressing it costs far more than
			// it saves, so do not offer gzip.
			connect.WithAcceptCompression("gzip", nil, nil))}
		t.clients[endpoint] = c
	}
	c.lastUsed = now
	return c.client
}

// grpcError classifies a failed call. Unavailable is how connect reports
// a connection that could not be made or broke; Canceled while the
// attempt is still live means the receiver reset the stream or the
// connection died under the write, which is the same thing. A receiver that does not
// implement the service, or refuses the request as malformed or not
// allowed, fails for good; any other status is retried.
func grpcError(a *attempt, err error) error {
	if a.ctx.Err() != nil {
		return ErrClosed // the attempt has already ended
	}
	code := connect.CodeOf(err)
	msg := err.Error()
	var ce *connect.Error
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	msg = safeText(msg)
	switch {
	case errors.Is(err, egress.ErrDenied):
		return permanent(fmt.Errorf("%w: %w", ErrUnreachable, err))
	case code == connect.CodeUnavailable, code == connect.CodeCanceled:
		return fmt.Errorf("%w: gRPC %s: %s", ErrUnreachable, code, msg)
	case code == connect.CodeUnimplemented, code == connect.CodeInvalidArgument, code == connect.CodeUnauthenticated, code == connect.CodePermissionDenied:
		return permanent(fmt.Errorf("%w: gRPC %s: %s", ErrRejected, code, msg))
	}
	return fmt.Errorf("%w: gRPC %s: %s", ErrRejected, code, msg)
}

// sweep forgets clients of endpoints unused since before cutoff; the HTTP
// transport closes their idle connections itself.
func (t *grpcTransport) sweep(cutoff time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for endpoint, c := range t.clients {
		if c.lastUsed.Before(cutoff) {
			delete(t.clients, endpoint)
		}
	}
}

func (t *grpcTransport) close() { t.tr.CloseIdleConnections() }

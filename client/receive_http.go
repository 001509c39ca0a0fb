package client

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
)

// Header names of an HTTP delivery (see docs/callbacks.md).
const (
	HeaderDeliveryID = webhook.HeaderDeliveryID
	HeaderTaskID     = webhook.HeaderTaskID
	HeaderAttempt    = webhook.HeaderAttempt
	HeaderFireAt     = webhook.HeaderFireAt
	HeaderClient     = webhook.HeaderClient
	HeaderGroup      = webhook.HeaderGroup
	HeaderTerm       = webhook.HeaderTerm
	HeaderTimestamp  = webhook.HeaderTimestamp
	HeaderSignature  = webhook.HeaderSignature
)

// HTTPReceiverConfig configures an HTTPReceiver.
type HTTPReceiverConfig struct {
	// Secret is the client's signing secret, as RegisterClient returned
	// it. Required.
	Secret []byte
	// Handler receives each delivery whose signature checks out. Required.
	Handler Handler
	// Tolerance is how far a delivery's timestamp may be from Clock.
	// Default DefaultSignatureTolerance (5 minutes).
	Tolerance time.Duration
	// MaxBody bounds the payload, in bytes. Default DefaultMaxDelivery.
	MaxBody int64
	// Clock is the receiver's clock for the timestamp check. Default: the
	// real clock.
	Clock clockwork.Clock
	// Logger receives one Debug line per refused request. Default:
	// discard.
	Logger *slog.Logger
}

// HTTPReceiver is an http.Handler that receives webhook deliveries: it
// checks the signature, hands the delivery to the handler, and answers
// 204 when the handler returns nil, so the server counts it delivered.
//
//	405 the method is not POST
//	413 the body is larger than MaxBody
//	400 a Boomerang header is missing or malformed
//	401 no signature, a signature that does not match, or a stale timestamp
//	500 the handler returned an error (its message is the body)
//
// The server retries 500 and dead-letters at once on 400, 401, 405 and
// 413, which only a configuration change can fix. Mount it on any
// server or mux; it needs no particular path.
type HTTPReceiver struct {
	cfg    HTTPReceiverConfig
	signer *webhook.Signer
}

// NewHTTPReceiver checks cfg and builds a receiver.
func NewHTTPReceiver(cfg HTTPReceiverConfig) (*HTTPReceiver, error) {
	switch {
	case len(cfg.Secret) == 0:
		return nil, errors.New("client: HTTPReceiverConfig.Secret is required")
	case cfg.Handler == nil:
		return nil, errors.New("client: HTTPReceiverConfig.Handler is required")
	case cfg.Tolerance < 0 || cfg.MaxBody < 0:
		return nil, errors.New("client: HTTPReceiverConfig.Tolerance and MaxBody must not be negative")
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = DefaultSignatureTolerance
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxDelivery
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &HTTPReceiver{cfg: cfg, signer: webhook.NewSigner(cfg.Secret)}, nil
}

// ServeHTTP implements http.Handler.
func (r *HTTPReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.refuse(w, http.StatusMethodNotAllowed, "method must be POST")
		return
	}
	body, err := readBody(w, req, r.cfg.MaxBody)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			r.refuse(w, http.StatusRequestEntityTooLarge, "body larger than "+strconv.FormatInt(r.cfg.MaxBody, 10)+" bytes")
			return
		}
		r.refuse(w, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	d, err := verified(r.signer, req.Header, body, r.cfg.Clock.Now(), r.cfg.Tolerance)
	if err != nil {
		code := http.StatusUnauthorized
		if errors.Is(err, ErrBadHeader) {
			code = http.StatusBadRequest
		}
		r.refuse(w, code, err.Error())
		return
	}
	if err := r.cfg.Handler(req.Context(), d); err != nil {
		http.Error(w, firstLine(err.Error()), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readBody reads the whole body, at most max bytes, in one allocation
// when its length is announced.
func readBody(w http.ResponseWriter, req *http.Request, max int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, req.Body, max)
	if n := req.ContentLength; n >= 0 && n <= max {
		body := make([]byte, n)
		if _, err := io.ReadFull(rd, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	return io.ReadAll(rd)
}

func (r *HTTPReceiver) refuse(w http.ResponseWriter, code int, msg string) {
	r.cfg.Logger.Debug("callback refused", "status", code, "reason", msg)
	http.Error(w, msg, code)
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// VerifyWebhook checks an HTTP delivery received by other means than
// HTTPReceiver (another framework, a queue): the signature in h over the
// headers and body with secret, and the timestamp against now within
// tolerance (0: DefaultSignatureTolerance). It returns the delivery the
// headers and body describe. Errors match ErrBadHeader, ErrNoSignature,
// ErrBadSignature or ErrStaleSignature.
func VerifyWebhook(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) (*boomerangv1.Delivery, error) {
	return verified(webhook.NewSigner(secret), h, body, now, tolerance)
}

func verified(s *webhook.Signer, h http.Header, body []byte, now time.Time, tolerance time.Duration) (*boomerangv1.Delivery, error) {
	m, err := s.Verify(h, body, now, tolerance)
	if err != nil {
		return nil, receiverError(err)
	}
	return &boomerangv1.Delivery{
		DeliveryId: m.DeliveryID, TaskId: m.TaskID, Attempt: m.Attempt,
		Client: m.Client, Group: m.Group, FireAtMs: m.FireAtMs,
		Payload: body, SentMs: m.Timestamp * 1000, Term: m.Term,
	}, nil
}

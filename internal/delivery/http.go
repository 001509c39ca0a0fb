package delivery

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/sanitize"
)

// Limits on text from receivers: an Ack's or a gRPC error's text goes
// into the task's last error cut to receiverTextBytes; an HTTP body is
// never read into an error, and a short one is drained, unread, so the
// connection can be reused.
const (
	receiverTextBytes = 256
	httpDrainBytes    = 64 << 10
)

// userAgent identifies Boomerang to receivers.
const userAgent = "Boomerang/1"

// httpTransport POSTs payloads to webhook URLs over one shared
// http.Transport whose keep-alive connections are pooled per host. It
// calls the transport directly, not through an http.Client: a webhook
// never follows a redirect (a redirect is an answer like any other
// non-2xx; following it would turn the POST into a GET), so the client's
// redirect machinery, and the header copy it makes for it, are only cost.
type httpTransport struct {
	e  *Engine
	tr *http.Transport
}

func newHTTPTransport(e *Engine) *httpTransport {
	tr := &http.Transport{
		Proxy:       nil, // webhooks go straight to their endpoint
		DialContext: e.dialer().DialContext,
		// Every attempt under way may hold a connection; keep as many
		// idle for reuse.
		MaxIdleConnsPerHost: maxConcurrent(e.cfg.Pools),
		IdleConnTimeout:     e.cfg.IdleTimeout,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		// Answers are read for their status only.
		DisableCompression: true,
	}
	return &httpTransport{e: e, tr: tr}
}

func maxConcurrent(pools map[string]PoolConfig) int {
	n := 0
	for _, p := range pools {
		n += p.MaxConcurrent
	}
	return min(n, 1<<14)
}

func (t *httpTransport) contextual() bool { return true }

func (t *httpTransport) send(a *attempt) { go t.post(a) }

func (t *httpTransport) post(a *attempt) {
	req := t.request(a)
	resp, err := t.tr.RoundTrip(req)
	if err != nil {
		a.finish(transportError(a.ctx, &url.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}))
		return
	}
	a.finish(answer(resp, t.e.cfg.Clock.Now))
}

// Header values every webhook shares.
var (
	contentType = []string{"application/octet-stream"}
	userAgents  = []string{userAgent}
)

// request builds the POST from the route's parsed URL, which the
// transport only reads.
func (t *httpTransport) request(a *attempt) *http.Request {
	body := a.task.Payload
	u := a.route.url
	req := &http.Request{
		Method: http.MethodPost, URL: u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, 11), Body: http.NoBody, ContentLength: int64(len(body)),
	}
	if len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	m := webhook.Meta{
		DeliveryID: a.id, TaskID: a.task.Id, Attempt: a.number, FireAtMs: a.task.DueMs,
		Client: a.task.Client, Group: a.task.Group, Timestamp: a.begun.Unix(),
	}
	webhook.SetHeaders(req.Header, &m, body, a.signers...)
	req.Header["Content-Type"] = contentType
	req.Header["User-Agent"] = userAgents
	return req.WithContext(a.ctx)
}

// answer turns a response into an outcome from its status, draining the
// body unread so the connection goes back to the pool.
func answer(resp *http.Response, now func() time.Time) error {
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, httpDrainBytes)
		_ = resp.Body.Close()
	}()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	se := &StatusError{Code: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		se.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	if !retryableStatus(resp.StatusCode) {
		return permanent(se)
	}
	return se
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now func() time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(s, 0), 24*3600)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now()), 0)
	}
	return 0
}

// safeText is a receiver's text as it may go into an error: its first
// line, made safe and bounded (package sanitize).
func safeText(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return sanitize.Text(s, receiverTextBytes)
}

// transportError classifies a failed request. When the attempt's context
// is done, the attempt has already ended (timed out, or cut short by
// Close) and this outcome is ignored; otherwise the endpoint could not be
// reached or hung up before answering.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ErrClosed
	}
	return dialError(err)
}

// sweep does nothing: the HTTP transport closes idle connections itself
// after IdleConnTimeout.
func (t *httpTransport) sweep(time.Time) {}

func (t *httpTransport) close() { t.tr.CloseIdleConnections() }

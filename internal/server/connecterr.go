package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// limitBody refuses request bodies over limit bytes with an error that
// carries the wire Error: at once when Content-Length says so, else when
// the body is read that far. connect passes the error through as it is.
func limitBody(next http.Handler, limit int) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > int64(limit) {
			_ = ew.Write(w, r, ConnectError(tooLarge(limit)))
			return
		}
		// A shallow copy: the server must still see its own body, to
		// close a connection whose body failed to read (a read timeout).
		limited := r.WithContext(r.Context())
		limited.Body = &limitedBody{ReadCloser: r.Body, left: int64(limit), limit: limit}
		next.ServeHTTP(w, limited)
	})
}

func tooLarge(limit int) error {
	return fmt.Errorf("%w: the request body exceeds %d bytes", ErrTooLarge, limit)
}

type limitedBody struct {
	io.ReadCloser
	left  int64
	limit int
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ConnectError(tooLarge(b.limit))
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, ConnectError(tooLarge(b.limit))
	}
	return n, err
}

// withErrorDetail makes every error the Connect handler sends carry the
// wire Error as a detail, also those connect makes itself before the
// service is called (a message that does not decode or is too large, an
// unknown compression): it holds the response back until the handler
// returns, and writes such an error again with the detail. Responses are
// one message, so holding them costs nothing they did not already take.
func withErrorDetail(next http.Handler) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held := &heldResponse{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(held, r)
		if err := held.bareError(); err != nil {
			_ = ew.Write(w, r, err)
			return
		}
		held.release(w)
	})
}

// heldResponse records a response.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header         { return h.header }
func (h *heldResponse) WriteHeader(status int)      { h.status = status }
func (h *heldResponse) Write(p []byte) (int, error) { return h.body.Write(p) }
func (h *heldResponse) Flush()                      {}

// release sends the recorded response.
func (h *heldResponse) release(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}

// bareError returns the recorded response's error, with the detail, when
// it is an error without one; nil otherwise.
func (h *heldResponse) bareError() *connect.Error {
	if strings.HasPrefix(h.header.Get("Content-Type"), "application/grpc") {
		status := h.trailer("Grpc-Status")
		if status == "" || status == "0" || h.trailer("Grpc-Status-Details-Bin") != "" {
			return nil
		}
		code, err := strconv.Atoi(status)
		if err != nil {
			code = int(connect.CodeUnknown)
		}
		msg, err := url.PathUnescape(h.trailer("Grpc-Message"))
		if err != nil {
			msg = h.trailer("Grpc-Message")
		}
		return withDetail(connect.Code(code), msg)
	}
	if h.status < 300 {
		return nil
	}
	var wire struct {
		Code    connect.Code      `json:"code"`
		Message string            `json:"message"`
		Details []json.RawMessage `json:"details"`
	}
	if json.Unmarshal(h.body.Bytes(), &wire) != nil || len(wire.Details) > 0 {
		return nil
	}
	return withDetail(wire.Code, wire.Message)
}

// trailer reads a gRPC trailer, sent as a header in a trailers-only
// response.
func (h *heldResponse) trailer(name string) string {
	if v := h.header.Get(name); v != "" {
		return v
	}
	return h.header.Get(http.TrailerPrefix + name)
}

// withDetail rebuilds an error connect made, with the wire Error. Its
// status follows from the code, and its code from the status, as for
// every other error.
func withDetail(code connect.Code, msg string) *connect.Error {
	status := boomerangv1.Status_STATUS_INTERNAL
	switch code {
	case connect.CodeInvalidArgument, connect.CodeResourceExhausted, connect.CodeOutOfRange,
		connect.CodeUnimplemented, connect.CodeFailedPrecondition:
		status = boomerangv1.Status_STATUS_INVALID_REQUEST
	case connect.CodeUnauthenticated, connect.CodePermissionDenied:
		status = boomerangv1.Status_STATUS_UNAUTHORIZED
	case connect.CodeCanceled, connect.CodeDeadlineExceeded, connect.CodeUnavailable:
		status = boomerangv1.Status_STATUS_BUSY
	}
	e := &boomerangv1.Error{Status: status, Message: msg}
	ce := connect.NewError(connectCodes[status], fmt.Errorf("%s", msg))
	if detail, err := connect.NewErrorDetail(e); err == nil {
		ce.AddDetail(detail)
	}
	return ce
}

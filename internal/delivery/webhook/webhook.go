// Package webhook is the wire format of Boomerang's HTTP callbacks, shared
// by the delivery engine that sends them and the receivers that check
// them: the headers that describe a delivery and the HMAC-SHA256 signature
// that proves it came from Boomerang.
//
// # Headers
//
// A delivery is a POST whose body is the task's payload, unchanged, with:
//
//	Boomerang-Delivery-Id  unique id of this attempt (decimal)
//	Boomerang-Task-Id      the task (decimal)
//	Boomerang-Attempt      1 for the first attempt of this occurrence (decimal)
//	Boomerang-Fire-At      due time of the occurrence, Unix milliseconds (decimal)
//	Boomerang-Client       the client that owns the task, percent-encoded
//	Boomerang-Group        the task's group, percent-encoded; "" when ungrouped
//	Boomerang-Timestamp    when this attempt was sent, Unix seconds (decimal)
//	Boomerang-Signature    v1=<64 hex digits>
//
// Client and group are percent-encoded: every byte outside A-Z, a-z, 0-9,
// "-", ".", "_" and "~" becomes %XX (upper-case hex), so any group name
// fits in a header.
//
// # Signature
//
// The signature is the lower-case hex HMAC-SHA256, keyed with the client's
// signing secret, of the header values exactly as sent, each followed by a
// line feed, then the body:
//
//	timestamp "\n" task-id "\n" attempt "\n" fire-at "\n" client "\n" group "\n" body
//
// Header values never contain a line feed, so the signed string cannot be
// split two ways. While a client's signing secret is being rotated, the
// header holds one entry per secret, newest first:
//
//	Boomerang-Signature: v1=<new secret's>,v1=<old secret's>
//
// so a receiver verifies with whichever secret it has. A receiver recomputes it, compares it in constant time
// with every v1= entry of Boomerang-Signature (there may be several,
// comma-separated), and rejects the delivery when none matches or when the
// timestamp is more than a tolerance (default five minutes) away from its
// own clock. Signing the task id, attempt and fire time with the body means
// a captured delivery cannot be relabelled to slip past a receiver's
// deduplication by (task id, fire time).
package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header names, in Go's canonical form.
const (
	HeaderDeliveryID = "Boomerang-Delivery-Id"
	HeaderTaskID     = "Boomerang-Task-Id"
	HeaderAttempt    = "Boomerang-Attempt"
	HeaderFireAt     = "Boomerang-Fire-At"
	HeaderClient     = "Boomerang-Client"
	HeaderGroup      = "Boomerang-Group"
	HeaderTimestamp  = "Boomerang-Timestamp"
	HeaderSignature  = "Boomerang-Signature"
)

// SchemeV1 prefixes a v1 signature in HeaderSignature.
const SchemeV1 = "v1="

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock, either way.
const DefaultTolerance = 5 * time.Minute

var (
	// ErrNoSignature: the request carries no v1 signature.
	ErrNoSignature = errors.New("webhook: no signature")
	// ErrBadSignature: no v1 signature matches the secret.
	ErrBadSignature = errors.New("webhook: signature does not match")
	// ErrStale: the timestamp is outside the tolerance.
	ErrStale = errors.New("webhook: timestamp outside tolerance")
	// ErrBadHeader: a Boomerang header is missing or malformed.
	ErrBadHeader = errors.New("webhook: bad header")
)

// Meta is what the headers say about a delivery.
type Meta struct {
	DeliveryID uint64
	TaskID     uint64
	Attempt    uint32
	FireAtMs   int64
	Client     string
	Group      string
	Timestamp  int64 // Unix seconds when sent
}

// Signer signs and verifies deliveries with one secret. It keeps its
// HMAC state for reuse, so signing allocates little. Safe for concurrent
// use.
type Signer struct {
	secret []byte
	states sync.Pool // *signState
}

type signState struct {
	mac     hash.Hash
	scratch []byte
	sum     []byte
}

// NewSigner returns a Signer for secret.
func NewSigner(secret []byte) *Signer {
	s := &Signer{secret: bytes.Clone(secret)}
	s.states.New = func() any {
		return &signState{mac: hmac.New(sha256.New, s.secret)}
	}
	return s
}

// sum computes the signature of the fields, each followed by a line feed,
// then the body, into hexSig (64 bytes).
func (s *Signer) sum(hexSig, body []byte, fields ...string) {
	st := s.states.Get().(*signState)
	st.mac.Reset()
	st.scratch = st.scratch[:0]
	for _, f := range fields {
		st.scratch = append(append(st.scratch, f...), '\n')
	}
	st.mac.Write(st.scratch)
	st.mac.Write(body)
	st.sum = st.mac.Sum(st.sum[:0])
	hex.Encode(hexSig, st.sum)
	if cap(st.scratch) > 4096 {
		st.scratch = nil
	}
	s.states.Put(st)
}

// SetHeaders writes m into h and, for each signer, a signature over m
// and body: several are comma-separated in one header, newest secret
// first, while a client's secret is being rotated.
func SetHeaders(h http.Header, m *Meta, body []byte, signers ...*Signer) {
	var num [5][20]byte
	ts := string(strconv.AppendInt(num[0][:0], m.Timestamp, 10))
	task := string(strconv.AppendUint(num[1][:0], m.TaskID, 10))
	attempt := string(strconv.AppendUint(num[2][:0], uint64(m.Attempt), 10))
	fireAt := string(strconv.AppendInt(num[3][:0], m.FireAtMs, 10))
	delivery := string(strconv.AppendUint(num[4][:0], m.DeliveryID, 10))
	client, group := Escape(m.Client), Escape(m.Group)
	// One backing array for every value, and direct map writes: the names
	// are already canonical.
	values := []string{delivery, task, attempt, fireAt, client, group, ts, ""}
	h[HeaderDeliveryID] = values[0:1:1]
	h[HeaderTaskID] = values[1:2:2]
	h[HeaderAttempt] = values[2:3:3]
	h[HeaderFireAt] = values[3:4:4]
	h[HeaderClient] = values[4:5:5]
	h[HeaderGroup] = values[5:6:6]
	h[HeaderTimestamp] = values[6:7:7]
	if len(signers) == 0 {
		return
	}
	const entry = len(SchemeV1) + 2*sha256.Size
	var one [entry]byte
	sig := one[:0]
	if len(signers) > 1 {
		sig = make([]byte, 0, len(signers)*(entry+1))
	}
	for i, s := range signers {
		if i > 0 {
			sig = append(sig, ',')
		}
		sig = append(sig, SchemeV1...)
		n := len(sig)
		sig = sig[:n+2*sha256.Size]
		s.sum(sig[n:], body, ts, task, attempt, fireAt, client, group)
	}
	values[7] = string(sig)
	h[HeaderSignature] = values[7:8:8]
}

// Sign returns the v1 signature (without the "v1=" prefix) of the given
// header values, exactly as they appear on the wire, and body.
func Sign(secret []byte, timestamp, taskID, attempt, fireAt, client, group string, body []byte) string {
	var sig [2 * sha256.Size]byte
	NewSigner(secret).sum(sig[:], body, timestamp, taskID, attempt, fireAt, client, group)
	return string(sig[:])
}

// Verify checks the signature and timestamp of a delivery and returns what
// its headers say. now is the receiver's clock; tolerance 0 means
// DefaultTolerance.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) (Meta, error) {
	return NewSigner(secret).Verify(h, body, now, tolerance)
}

// Verify is the package's Verify with s's secret.
func (s *Signer) Verify(h http.Header, body []byte, now time.Time, tolerance time.Duration) (Meta, error) {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	m, err := Parse(h)
	if err != nil {
		return m, err
	}
	sigs := h[HeaderSignature]
	if len(sigs) == 0 {
		return m, ErrNoSignature
	}
	var want [2 * sha256.Size]byte
	s.sum(want[:], body, get(h, HeaderTimestamp), get(h, HeaderTaskID), get(h, HeaderAttempt),
		get(h, HeaderFireAt), get(h, HeaderClient), get(h, HeaderGroup))
	if !matches(sigs, want[:]) {
		if found(sigs) {
			return m, ErrBadSignature
		}
		return m, ErrNoSignature
	}
	// Checked after the signature, so a stale verdict is about a genuine
	// delivery, not a forged one.
	if skew := now.Sub(time.Unix(m.Timestamp, 0)); skew > tolerance || skew < -tolerance {
		return m, fmt.Errorf("%w: sent %v, now %v, tolerance %v", ErrStale,
			time.Unix(m.Timestamp, 0).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), tolerance)
	}
	return m, nil
}

// get is h.Get for a canonical name, without canonicalizing it again.
func get(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// matches reports whether any v1 entry of the signature headers equals
// the hex signature want, comparing in constant time. Hex digits may be
// upper or lower case.
func matches(headers []string, want []byte) bool {
	ok := false
	for _, h := range headers {
		for entry := range strings.SplitSeq(h, ",") {
			sig, isV1 := strings.CutPrefix(strings.TrimSpace(entry), SchemeV1)
			if !isV1 || len(sig) != len(want) {
				continue
			}
			var lower [2 * sha256.Size]byte
			for i := range len(sig) {
				c := sig[i]
				if 'A' <= c && c <= 'F' {
					c += 'a' - 'A'
				}
				lower[i] = c
			}
			if subtle.ConstantTimeCompare(lower[:], want) == 1 {
				ok = true
			}
		}
	}
	return ok
}

func found(headers []string) bool {
	for _, h := range headers {
		for entry := range strings.SplitSeq(h, ",") {
			if strings.HasPrefix(strings.TrimSpace(entry), SchemeV1) {
				return true
			}
		}
	}
	return false
}

// Parse reads the delivery headers without checking the signature.
func Parse(h http.Header) (Meta, error) {
	var m Meta
	var err error
	if m.DeliveryID, err = parseUint(h, HeaderDeliveryID, 64); err != nil {
		return m, err
	}
	if m.TaskID, err = parseUint(h, HeaderTaskID, 64); err != nil {
		return m, err
	}
	attempt, err := parseUint(h, HeaderAttempt, 32)
	if err != nil {
		return m, err
	}
	m.Attempt = uint32(attempt)
	if m.FireAtMs, err = parseInt(h, HeaderFireAt); err != nil {
		return m, err
	}
	if m.Timestamp, err = parseInt(h, HeaderTimestamp); err != nil {
		return m, err
	}
	if m.Client, err = Unescape(get(h, HeaderClient)); err != nil {
		return m, fmt.Errorf("%w: %s: %w", ErrBadHeader, HeaderClient, err)
	}
	if m.Group, err = Unescape(get(h, HeaderGroup)); err != nil {
		return m, fmt.Errorf("%w: %s: %w", ErrBadHeader, HeaderGroup, err)
	}
	return m, nil
}

func parseUint(h http.Header, name string, bits int) (uint64, error) {
	v := get(h, name)
	n, err := strconv.ParseUint(v, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q", ErrBadHeader, name, v)
	}
	return n, nil
}

func parseInt(h http.Header, name string) (int64, error) {
	v := get(h, name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q", ErrBadHeader, name, v)
	}
	return n, nil
}

const upperHex = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// Escape percent-encodes every byte of s outside A-Z a-z 0-9 - . _ ~.
func Escape(s string) string {
	n := 0
	for i := range len(s) {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := range len(s) {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', upperHex[c>>4], upperHex[c&15])
	}
	return string(b)
}

// Unescape decodes %XX sequences; other bytes are kept as they are.
func Unescape(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("bad escape %q", s[i:i+3])
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

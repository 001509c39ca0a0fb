// Package sanitize makes text that comes from outside the server
// (receivers' error messages and response bodies, gRPC status messages)
// safe to store, log and show: valid UTF-8, no control or bidirectional
// formatting characters, and bounded in size, cut on a character
// boundary.
package sanitize

import (
	"strings"
	"unicode/utf8"
)

// ellipsis ends text that was cut.
const ellipsis = "…"

// Text returns s made safe, at most limit bytes long (a limit below 8 is
// taken as 8). Invalid UTF-8 and unsafe characters (C0 and C1 controls, DEL,
// bidirectional overrides and isolates) each become U+FFFD; newlines and
// tabs become spaces. Text longer than max is cut on a character boundary
// and ends with "…". Only as much of s is read as the result needs, so a
// megabyte of input costs no more than limit bytes of it.
func Text(s string, limit int) string {
	limit = max(limit, 8)
	if len(s) <= limit && safe(s) {
		return s
	}
	// Build the safe text until it is over the limit; the input beyond
	// that is never read.
	var b strings.Builder
	b.Grow(min(len(s), limit+utf8.UTFMax))
	for i := 0; i < len(s) && b.Len() <= limit; {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unsafe(r):
			r = utf8.RuneError
		}
		b.WriteRune(r)
		i += size
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	cut := limit - len(ellipsis)
	for !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + ellipsis
}

// safe reports whether s needs no change. A U+FFFD in s is kept; only
// bytes that are not UTF-8 are replaced.
func safe(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || r == '\n' || r == '\r' || r == '\t' || unsafe(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafe reports a character that can change how surrounding text is
// shown: control characters and bidirectional formatting.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

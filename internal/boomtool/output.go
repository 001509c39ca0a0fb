package boomtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

const (
	statusInvalid      = boomerangv1.Status_STATUS_INVALID_REQUEST
	statusUnauthorized = boomerangv1.Status_STATUS_UNAUTHORIZED
)

// statusWords names a status for people: STATUS_NOT_FOUND → "not found".
func statusWords(s boomerangv1.Status) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.String(), "STATUS_"), "_", " "))
}

// enumWord names an enum value for people: TASK_STATUS_SCHEDULED →
// "scheduled".
func enumWord(name, prefix string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, prefix), "_", "-"))
}

// writeJSON writes m in the protobuf JSON mapping, the shape the HTTP/JSON
// API uses, indented by two spaces.
func writeJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// table writes aligned columns. Cells are escaped (see clean): group
// keys, payloads and errors come from clients, and control characters
// from them must not reach the terminal.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = clean(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// fields writes "key: value" lines, aligned, with values escaped like
// table cells.
type fields struct{ tw *tabwriter.Writer }

func newFields(w io.Writer) *fields { return &fields{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)} }

func (f *fields) add(key, value string) {
	if value != "" {
		fmt.Fprintf(f.tw, "%s:\t%s\n", key, clean(value))
	}
}

// clean escapes what a terminal would act on rather than show: control
// characters (ANSI escapes, tabs, newlines), other non-printable runes and
// bytes that are not UTF-8, in Go's backslash notation.
func clean(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
func (f *fields) flush() error { return f.tw.Flush() }

// humanDuration prints d briefly: 90s → "1m30s", 36h → "1d12h", 5m →
// "5m".
func humanDuration(d time.Duration) string {
	if d < 0 {
		return "-" + humanDuration(-d)
	}
	if d < time.Second {
		return d.String()
	}
	d = d.Round(time.Second)
	parts := []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	var b strings.Builder
	for i, p := range parts {
		n := d / p.unit
		d -= n * p.unit
		// Zero units are left out at the ends but kept between others:
		// 1d0h5m reads better as 1d0h5m than as 1d5m.
		if n > 0 || (b.Len() > 0 && d > 0 && i < len(parts)-1) {
			fmt.Fprintf(&b, "%d%s", n, p.name)
		}
	}
	return b.String()
}

// relative says roughly when t is from now: "in 1m30s", "5s ago",
// "in 2d4h", "now". Beyond an hour it rounds to minutes, beyond a day to
// hours.
func relative(t, now time.Time) string {
	d := t.Sub(now)
	switch abs := max(d, -d); {
	case abs >= 24*time.Hour:
		d = d.Round(time.Hour)
	case abs >= time.Hour:
		d = d.Round(time.Minute)
	default:
		d = d.Round(time.Second)
	}
	switch {
	case d == 0:
		return "now"
	case d > 0:
		return "in " + humanDuration(d)
	}
	return humanDuration(-d) + " ago"
}

// when prints a Unix-ms time as RFC 3339 in UTC and relative to now; ""
// for zero.
func when(ms int64, now time.Time) string {
	if ms == 0 {
		return ""
	}
	t := time.UnixMilli(ms)
	return t.UTC().Format(time.RFC3339) + " (" + relative(t, now) + ")"
}

// every prints a repeat interval: "every 5m", or "once".
func every(ms int64) string {
	if ms == 0 {
		return "once"
	}
	return "every " + humanDuration(time.Duration(ms)*time.Millisecond)
}

// payloadPreview shows printable text quoted and cut at limit runes, and
// other bytes as their size and a hex prefix.
func payloadPreview(p []byte, limit int) string {
	if len(p) == 0 {
		return "(empty)"
	}
	if utf8.Valid(p) && printable(p) {
		s := string(p)
		if utf8.RuneCountInString(s) > limit {
			r := []rune(s)
			return strconv.Quote(string(r[:limit])) + "…"
		}
		return strconv.Quote(s)
	}
	n := min(len(p), limit/2)
	more := ""
	if n < len(p) {
		more = "…"
	}
	return fmt.Sprintf("%d bytes 0x%x%s", len(p), p[:n], more)
}

func printable(p []byte) bool {
	for _, r := range string(p) {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

type jsonBuffer = bytes.Buffer

// writeMergedJSON writes the JSON object obj with one more string field.
func writeMergedJSON(w io.Writer, obj []byte, key, value string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return err
	}
	v, _ := json.Marshal(value)
	m[key] = v
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	euro := "€" // 3 bytes: e2 82 ac
	for _, c := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"short and clean", "HTTP 503: busy", 64, "HTTP 503: busy"},
		{"empty", "", 64, ""},
		{"cut on a boundary", strings.Repeat("a", 9) + euro + "tail", 14, strings.Repeat("a", 9) + "…"},
		{"multi-byte at the cut", strings.Repeat("a", 8) + euro + euro, 13, strings.Repeat("a", 8) + "…"},
		{"exact fit is not cut", strings.Repeat("a", 10) + euro, 13, strings.Repeat("a", 10) + euro},
		{"invalid bytes", "bad \xe2\x82 end \xff", 64, "bad \ufffd\ufffd end \ufffd"},
		{"controls", "a\x1b[2Jb\x00c\x7fd\u0085e", 64, "a\ufffd[2Jb\ufffdc\ufffdd\ufffde"},
		{"newlines and tabs", "line1\r\nline2\tx", 64, "line1  line2 x"},
		{"bidi override", "abc\u202edcba", 64, "abc\ufffddcba"},
		{"limit floor", "0123456789", 1, "01234…"},
	} {
		if got := Text(c.in, c.limit); got != c.want {
			t.Errorf("%s: Text(%q, %d) = %q, want %q", c.name, c.in, c.limit, got, c.want)
		}
	}
}

func TestTextOfAMegabyteIsBounded(t *testing.T) {
	in := strings.Repeat("\xe2\x82\xac\xff\x1b", 1<<20/5)
	got := Text(in, 256)
	if len(got) > 256 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("Text of 1 MB: %d bytes, valid %v, %q", len(got), utf8.ValidString(got), got[len(got)-8:])
	}
}

func FuzzText(f *testing.F) {
	f.Add("HTTP 500 \xe2\x82", 16)
	f.Add(strings.Repeat("€", 100), 40)
	f.Add("\x1b]0;title\x07", 8)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		limit = limit%1024 + 1
		got := Text(in, limit)
		if !utf8.ValidString(got) || len(got) > max(limit, 8) {
			t.Fatalf("Text(%q, %d) = %q: invalid or %d bytes", in, limit, got, len(got))
		}
		if !safe(got) {
			t.Fatalf("Text(%q, %d) = %q keeps an unsafe character", in, limit, got)
		}
		if safe(in) && len(in) <= max(limit, 8) && got != in {
			t.Fatalf("Text changed safe, short %q into %q", in, got)
		}
		if Text(got, limit) != got {
			t.Fatalf("Text is not idempotent on %q", got)
		}
	})
}

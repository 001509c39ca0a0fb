package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// recordingHandler keeps every record it is given.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recordingHandler) levels() map[slog.Level]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := map[slog.Level]int{}
	for _, r := range h.records {
		n[r.Level]++
	}
	return n
}

func TestPebbleEventsGoToTheLogger(t *testing.T) {
	t.Parallel()
	h := new(recordingHandler)
	s, err := Open(t.TempDir(), Options{Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, func(b *Batch) { b.PutClient(client("acme")) })
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	levels := h.levels()
	if levels[slog.LevelDebug] == 0 {
		t.Errorf("no Pebble events logged at Debug: %v", levels)
	}
	if levels[slog.LevelError] != 0 || levels[slog.LevelInfo] != 0 {
		t.Errorf("a healthy open, flush and close logged above Debug: %v", levels)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		found := false
		r.Attrs(func(a slog.Attr) bool {
			found = found || (a.Key == "component" && a.Value.String() == "pebble")
			return true
		})
		if !found {
			t.Fatalf("record %q lacks component=pebble", r.Message)
		}
	}
}

func TestFatalfPanicsAndIsRecovered(t *testing.T) {
	t.Parallel()
	h := new(recordingHandler)
	l := pebbleLogger{log: slog.New(h)}
	err := func() (err error) {
		defer recoverFatal(&err)
		l.Fatalf("MANIFEST sync failed: %s", "disk on fire")
		return nil
	}()
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("recovered %v, want ErrFailed with the message", err)
	}
	if h.levels()[slog.LevelError] != 1 {
		t.Fatalf("Fatalf logged %v, want one Error", h.levels())
	}

	// Other panics are not Pebble's verdict and go on.
	defer func() {
		if r := recover(); r != "unrelated" {
			t.Fatalf("recovered %v, want the unrelated panic to pass through", r)
		}
	}()
	func() {
		var err error
		defer recoverFatal(&err)
		panic("unrelated")
	}()
}

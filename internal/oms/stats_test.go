package oms

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// recordHandler sends every log record to a channel.
type recordHandler struct{ ch chan slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.ch <- r.Clone():
	default: // the test has what it needs
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// The periodic lines carry every counter the demo documents, per
// partition, and a line of totals; the final line sums up the run.
func TestStatsLines(t *testing.T) {
	t.Parallel()
	h := recordHandler{ch: make(chan slog.Record, 1024)}
	srv, err := New(Config{Listen: "127.0.0.1:0", Partitions: 2, ExecMax: 0, StatsInterval: 5 * time.Millisecond}, slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv)
	c.send(valid(1, 1), valid(2, 1), valid(3, 1))
	c.recvN(3)

	want := map[string][]string{
		"partition": {"p", "received", "busy", "group_full", "accepted", "ack", "rej", "dispatched",
			"completed", "queued_behind_busy", "max_depth", "queued", "in_flight"},
		"totals": {"received", "per_s", "ack", "rej", "answered", "dropped", "conns"},
	}
	seen := map[string]bool{}
	var received uint64
	timeout := time.After(waitLimit)
	for !seen["partition"] || !seen["totals"] || received < 3 {
		var r slog.Record
		select {
		case r = <-h.ch:
		case <-timeout:
			t.Fatalf("no complete stats lines; saw %v", seen)
		}
		keys, ok := want[r.Message]
		if !ok {
			continue
		}
		got := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { got[a.Key] = a.Value; return true })
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				t.Fatalf("%s line lacks %q: %v", r.Message, k, got)
			}
		}
		seen[r.Message] = true
		if r.Message == "totals" {
			received = got["received"].Uint64()
		}
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case r := <-h.ch:
			if r.Message == "stopped" {
				return
			}
		case <-timeout:
			t.Fatal("no final line")
		}
	}
}

package boomload

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// Report is the outcome of a run. Warmup registrations are not in it.
type Report struct {
	Conns          int              `json:"conns"`
	Depth          int              `json:"depth"`
	Batch          int              `json:"batch"` // tasks per request
	PayloadBytes   int              `json:"payload_bytes"`
	Acked          int64            `json:"acked"`
	Errors         map[string]int64 `json:"errors,omitempty"` // by status, or "connection" / "canceled"
	FirstError     string           `json:"first_error,omitempty"`
	ElapsedS       float64          `json:"elapsed_s"`
	ThroughputPerS float64          `json:"throughput_per_s"` // acknowledged registrations per second
	P50us          float64          `json:"p50_us"`
	P99us          float64          `json:"p99_us"`
	P999us         float64          `json:"p999_us"`
	MaxUs          float64          `json:"max_us"`
}

// report merges the connections' tallies; their workers have finished.
func (r *run) report(tallies []*tally, elapsed time.Duration) *Report {
	latency := newHistogram()
	rep := &Report{Conns: r.cfg.Conns, Depth: r.cfg.Depth, Batch: r.cfg.Batch, PayloadBytes: len(r.payload), ElapsedS: elapsed.Seconds()}
	for _, t := range tallies {
		latency.Merge(t.latency)
		rep.Acked += t.acked
		for k, v := range t.errs {
			if rep.Errors == nil {
				rep.Errors = map[string]int64{}
			}
			rep.Errors[k] += v
		}
		if t.first != nil && rep.FirstError == "" {
			rep.FirstError = t.first.Error()
		}
	}
	rep.P50us = float64(latency.ValueAtQuantile(50))
	rep.P99us = float64(latency.ValueAtQuantile(99))
	rep.P999us = float64(latency.ValueAtQuantile(99.9))
	rep.MaxUs = float64(latency.Max())
	if elapsed > 0 {
		rep.ThroughputPerS = float64(rep.Acked) / elapsed.Seconds()
	}
	return rep
}

// ErrorCount is the number of failed registrations.
func (r *Report) ErrorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// WriteJSON writes the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	requests := "registrations"
	if r.Batch > 1 {
		requests = fmt.Sprintf("batches of %d", r.Batch)
	}
	_, err := fmt.Fprintf(w, `connections      %d × %d %s in flight, %d-byte payloads
acknowledged     %d in %.2fs
throughput       %.0f registrations/s
ack latency      p50 %s  p99 %s  p99.9 %s  max %s
`, r.Conns, r.Depth, requests, r.PayloadBytes, r.Acked, r.ElapsedS, r.ThroughputPerS,
		us(r.P50us), us(r.P99us), us(r.P999us), us(r.MaxUs))
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		if _, err := fmt.Fprintf(w, "errors           %d %s\n", r.Errors[k], k); err != nil {
			return err
		}
	}
	if r.FirstError != "" {
		_, err = fmt.Fprintf(w, "first error      %s\n", r.FirstError)
	}
	return err
}

func us(v float64) string {
	return time.Duration(v * float64(time.Microsecond)).Round(time.Microsecond).String()
}

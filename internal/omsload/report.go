package omsload

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/HdrHistogram/hdrhistogram-go"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/internal/oms"
)

// Report is the outcome of a run. Every order the run sent is in exactly
// one of: Responses, MissingResponses.
type Report struct {
	Scenario   string  `json:"scenario"`
	Mode       string  `json:"mode"` // "open-loop" or "closed-loop"
	Conns      int     `json:"conns"`
	TargetRate float64 `json:"target_rate_per_s"` // 0 in closed loop

	Sent            uint64            `json:"sent"`
	Responses       uint64            `json:"responses"` // first answers to orders sent
	Acks            uint64            `json:"acks"`
	Rejects         uint64            `json:"rejects"` // every REJ, admission rejects included
	Busy            uint64            `json:"busy"`
	GroupFull       uint64            `json:"group_full"`
	ShuttingDown    uint64            `json:"shutting_down"`
	RejectsByReason map[string]uint64 `json:"rejects_by_reason"`

	FIFOViolations     uint64 `json:"fifo_violations"`     // an account's answer with a seq not above the last one
	DuplicateResponses uint64 `json:"duplicate_responses"` // a second answer to one order
	MissingResponses   uint64 `json:"missing_responses"`   // orders sent and never answered
	UnknownResponses   uint64 `json:"unknown_responses"`   // answers to no order sent on that connection
	WrongDecisions     uint64 `json:"wrong_decisions"`     // an answer other than the order was built to get
	ConnErrors         int    `json:"conn_errors"`         // connections that failed rather than closed

	ElapsedS       float64 `json:"elapsed_s"` // first send to last answer
	ThroughputPerS float64 `json:"throughput_per_s"`

	// Latency of orders that entered the pipeline (admission rejects are
	// left out), from the scheduled send time in open loop, so a stalled
	// server or sender cannot hide delay (coordinated omission), and from
	// the actual send time in closed loop.
	Latency
	// Service is latency from the actual send time, in both modes.
	Service Latency `json:"service"`
	// Groups splits Latency by group: "hot" and "others" in hot-family.
	Groups map[string]Latency `json:"groups,omitempty"`

	// Partitions counts pipeline answers by the partition that ran them.
	Partitions map[int32]uint64 `json:"partitions"`
}

// Latency summarizes a histogram in microseconds.
type Latency struct {
	Count  int64   `json:"count"`
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

func summarize(h *hdrhistogram.Histogram) Latency {
	us := func(ns int64) float64 { return float64(ns/100) / 10 }
	return Latency{
		Count:  h.TotalCount(),
		P50us:  us(h.ValueAtQuantile(50)),
		P99us:  us(h.ValueAtQuantile(99)),
		P999us: us(h.ValueAtQuantile(99.9)),
		MaxUs:  us(h.Max()),
	}
}

// Violations counts everything that breaks the protocol's promises: FIFO
// per account, exactly one answer per order, the right answer.
func (r *Report) Violations() uint64 {
	return r.FIFOViolations + r.DuplicateResponses + r.MissingResponses + r.UnknownResponses + r.WrongDecisions
}

// build merges the streams' tallies once every receiver has finished.
func build(cfg *Config, streams []*stream) *Report {
	r := &Report{
		Scenario: cfg.Scenario, Mode: "closed-loop", Conns: len(streams), TargetRate: cfg.Rate,
		RejectsByReason: map[string]uint64{}, Partitions: map[int32]uint64{},
	}
	if cfg.Rate > 0 {
		r.Mode = "open-loop"
	}
	latency, service := newHistogram(), newHistogram()
	groups := map[string]*hdrhistogram.Histogram{}
	var last int64
	for _, st := range streams {
		t := &st.tally
		r.Sent += uint64(st.sent.Load())
		r.Responses += t.responses
		r.Acks += t.acks
		r.FIFOViolations += t.fifo
		r.DuplicateResponses += t.duplicate
		r.UnknownResponses += t.unknown
		r.WrongDecisions += t.wrong
		r.MissingResponses += uint64(st.sent.Load()) - t.responses
		for reason, n := range t.reasons {
			if n > 0 {
				r.RejectsByReason[oms.ReasonName(omsv1.Reason(reason))] += n
				r.Rejects += n
			}
		}
		for p, n := range t.partitions {
			r.Partitions[p] += n
		}
		if st.sendErr != nil || st.recvErr != nil {
			r.ConnErrors++
		}
		latency.Merge(t.latency)
		service.Merge(t.service)
		if g := st.plan.group; g != "" {
			if groups[g] == nil {
				groups[g] = newHistogram()
			}
			groups[g].Merge(t.latency)
		}
		last = max(last, t.lastAt)
	}
	r.Busy = r.RejectsByReason["BUSY"]
	r.GroupFull = r.RejectsByReason["GROUP_FULL"]
	r.ShuttingDown = r.RejectsByReason["SHUTTING_DOWN"]
	r.Latency, r.Service = summarize(latency), summarize(service)
	if len(groups) > 0 {
		r.Groups = map[string]Latency{}
		for g, h := range groups {
			r.Groups[g] = summarize(h)
		}
	}
	if last > 0 {
		r.ElapsedS = float64(last) / 1e9
		r.ThroughputPerS = float64(r.Responses) / r.ElapsedS
	}
	return r
}

// WriteJSON writes r as one JSON object on one line.
func (r *Report) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteText writes r for people.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	mode := r.Mode
	if r.TargetRate > 0 {
		mode = fmt.Sprintf("%s at %.0f orders/s", mode, r.TargetRate)
	}
	fmt.Fprintf(tw, "scenario\t%s, %d connections, %s\n", r.Scenario, r.Conns, mode)
	fmt.Fprintf(tw, "sent\t%d\n", r.Sent)
	fmt.Fprintf(tw, "responses\t%d  (ACK %d, REJ %d of which BUSY %d, GROUP_FULL %d, SHUTTING_DOWN %d)\n",
		r.Responses, r.Acks, r.Rejects, r.Busy, r.GroupFull, r.ShuttingDown)
	reasons := make([]string, 0, len(r.RejectsByReason))
	for name := range r.RejectsByReason {
		reasons = append(reasons, name)
	}
	slices.Sort(reasons)
	for _, name := range reasons {
		fmt.Fprintf(tw, "  REJ %s\t%d\n", name, r.RejectsByReason[name])
	}
	fmt.Fprintf(tw, "violations\t%d  (fifo %d, duplicate %d, missing %d, unknown %d, wrong decision %d)\n",
		r.Violations(), r.FIFOViolations, r.DuplicateResponses, r.MissingResponses, r.UnknownResponses, r.WrongDecisions)
	if r.ConnErrors > 0 {
		fmt.Fprintf(tw, "connection errors\t%d\n", r.ConnErrors)
	}
	fmt.Fprintf(tw, "throughput\t%.0f orders/s over %.2fs\n", r.ThroughputPerS, r.ElapsedS)
	if r.Mode == "open-loop" {
		writeLatency(tw, "latency (from schedule)", r.Latency)
		writeLatency(tw, "latency (from send)", r.Service)
	} else {
		writeLatency(tw, "latency", r.Latency)
	}
	for _, g := range []struct{ name, label string }{{groupHot, "  hot account"}, {groupOthers, "  other accounts"}} {
		if l, ok := r.Groups[g.name]; ok {
			writeLatency(tw, g.label, l)
		}
	}
	parts := make([]int32, 0, len(r.Partitions))
	for p := range r.Partitions {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	fmt.Fprint(tw, "answers by partition\t")
	for _, p := range parts {
		fmt.Fprintf(tw, "p%d=%d ", p, r.Partitions[p])
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

func writeLatency(w io.Writer, name string, l Latency) {
	fmt.Fprintf(w, "%s\tp50 %.1fµs  p99 %.1fµs  p99.9 %.1fµs  max %.1fµs  (%d orders)\n",
		name, l.P50us, l.P99us, l.P999us, l.MaxUs, l.Count)
}

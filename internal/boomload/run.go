package boomload

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// Latencies are recorded in microseconds, from 1 µs to a minute.
func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// run is the shared state of one load run.
type run struct {
	cfg     Config
	payload []byte
	groups  []string

	claimed  atomic.Int64 // registrations handed out, warmup included
	limit    int64        // total to hand out; 0 = until stop
	stop     chan struct{}
	measured atomic.Bool // false during warmup

}

// tally is one connection's results; its workers share it.
type tally struct {
	mu      sync.Mutex
	latency *hdrhistogram.Histogram
	acked   int64
	errs    map[string]int64
	first   error
}

// Run drives the server as Config says and reports what happened. ctx
// cancels the run early; the report then covers what was done.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, stop: make(chan struct{})}
	if cfg.PayloadSize > 0 {
		r.payload = make([]byte, cfg.PayloadSize)
		for i := range r.payload {
			r.payload[i] = 'a' + byte(i%26)
		}
	}
	for i := range max(cfg.Groups, 0) {
		r.groups = append(r.groups, cfg.GroupPrefix+strconv.Itoa(i))
	}
	if cfg.Count > 0 {
		r.limit = int64(cfg.Count + cfg.Warmup)
	}
	clients, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	r.measured.Store(cfg.Warmup == 0)
	// Workers run on their own context, given up Grace after the run
	// ends: a server that stops answering cannot hold the run open.
	ctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	start := time.Now()
	var startMeasured atomic.Int64
	startMeasured.Store(start.UnixNano())
	var wg sync.WaitGroup
	tallies := make([]*tally, len(clients))
	for i, c := range clients {
		tl := &tally{latency: newHistogram(), errs: map[string]int64{}}
		tallies[i] = tl
		for range cfg.Depth {
			wg.Go(func() { r.worker(ctx, c, tl, &startMeasured) })
		}
	}
	timer := r.stopAfter(ctx, giveUp)
	wg.Wait()
	timer()
	elapsed := time.Since(time.Unix(0, startMeasured.Load()))
	return r.report(tallies, elapsed), nil
}

func (r *run) dial(ctx context.Context) ([]*client.Client, error) {
	var clients []*client.Client
	for range r.cfg.Conns {
		c, err := client.Dial(ctx, r.cfg.Addr, r.cfg.Credentials, append(r.cfg.Options[:len(r.cfg.Options):len(r.cfg.Options)], client.WithMaxInFlight(r.cfg.Depth))...)
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, err
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// stopAfter closes r.stop after the duration or when ctx ends, and calls
// giveUp Grace later if workers are still waiting for answers; the
// returned func ends it.
func (r *run) stopAfter(ctx context.Context, giveUp func()) func() {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var after <-chan time.Time
		if r.cfg.Duration > 0 {
			t := time.NewTimer(r.cfg.Duration)
			defer t.Stop()
			after = t.C
		}
		select {
		case <-after:
		case <-ctx.Done():
		case <-done:
			return
		}
		close(r.stop)
		grace := time.NewTimer(r.cfg.Grace)
		defer grace.Stop()
		select {
		case <-grace.C:
			giveUp()
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// worker keeps one registration in flight until the run ends.
func (r *run) worker(ctx context.Context, c *client.Client, tl *tally, startMeasured *atomic.Int64) {
	req := &boomerangv1.RegisterTaskRequest{
		Payload: r.payload,
		When:    &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: r.cfg.Delay.Milliseconds()},
	}
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		n := r.claimed.Add(1)
		if r.limit > 0 && n > r.limit {
			return
		}
		if len(r.groups) > 0 {
			req.Group = r.groups[int(n)%len(r.groups)]
		}
		if int(n) == r.cfg.Warmup+1 && r.cfg.Warmup > 0 {
			startMeasured.Store(time.Now().UnixNano())
			r.measured.Store(true)
		}
		measured := r.measured.Load()
		t0 := time.Now()
		_, err := c.RegisterTask(ctx, req)
		tl.record(time.Since(t0), err, measured)
		if ctx.Err() != nil {
			return
		}
	}
}

func (t *tally) record(d time.Duration, err error, measured bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.errs[errorKind(err)]++
		if t.first == nil {
			t.first = err
		}
		return
	}
	if !measured {
		return
	}
	t.acked++
	_ = t.latency.RecordValue(max(1, d.Microseconds()))
}

// errorKind names an error for the report: its status, or "connection"
// and "timeout" for the client's own.
func errorKind(err error) string {
	if s := client.StatusOf(err); s != boomerangv1.Status_STATUS_UNSPECIFIED {
		return s.String()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return "connection"
}

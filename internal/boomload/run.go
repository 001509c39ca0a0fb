package boomload

import (
	"context"
	"errors"
	"fmt"
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

	claimed atomic.Int64 // registrations handed out, warmup included
	warmup  int64        // registrations not measured: Config.Warmup in whole requests
	limit   int64        // total to hand out; 0 = until stop
	stop    chan struct{}
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
	r.warmup = int64((cfg.Warmup + cfg.Batch - 1) / cfg.Batch * cfg.Batch)
	if cfg.Count > 0 {
		r.limit = int64(cfg.Count) + r.warmup
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

// worker keeps one request in flight until the run ends.
func (r *run) worker(ctx context.Context, c *client.Client, tl *tally, startMeasured *atomic.Int64) {
	tasks := make([]*boomerangv1.RegisterTaskRequest, r.cfg.Batch)
	for i := range tasks {
		tasks[i] = &boomerangv1.RegisterTaskRequest{
			Payload: r.payload,
			When:    &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: r.cfg.Delay.Milliseconds()},
		}
	}
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		first, n := r.claim()
		if n == 0 {
			return
		}
		for i, t := range tasks[:n] {
			if len(r.groups) > 0 {
				t.Group = r.groups[int(first+int64(i))%len(r.groups)]
			}
		}
		// Requests start at whole batches, and so does the warmup: the
		// request right after it starts the measurement.
		measured := first > r.warmup
		if r.warmup > 0 && first == r.warmup+1 {
			startMeasured.Store(time.Now().UnixNano())
		}
		t0 := time.Now()
		outcomes := r.send(ctx, c, tasks[:n])
		tl.record(time.Since(t0), outcomes, measured)
		if ctx.Err() != nil {
			return
		}
	}
}

// claim hands out the next request's tasks: the 1-based number of its
// first task and how many, 0 once the count is reached.
func (r *run) claim() (first int64, n int) {
	end := r.claimed.Add(int64(r.cfg.Batch))
	first = end - int64(r.cfg.Batch) + 1
	if r.limit > 0 {
		end = min(end, r.limit)
	}
	return first, int(max(end-first+1, 0))
}

// send makes one request and returns each task's error, nil for those
// registered.
func (r *run) send(ctx context.Context, c *client.Client, tasks []*boomerangv1.RegisterTaskRequest) []error {
	errs := make([]error, len(tasks))
	if r.cfg.Batch == 1 {
		_, errs[0] = c.RegisterTask(ctx, tasks[0])
		return errs
	}
	resp, err := c.RegisterTasks(ctx, &boomerangv1.RegisterTasksRequest{Tasks: tasks})
	if err == nil && len(resp.GetResults()) != len(tasks) {
		err = fmt.Errorf("%d results for %d tasks", len(resp.GetResults()), len(tasks))
	}
	for i := range errs {
		switch {
		case err != nil:
			errs[i] = err
		case resp.GetResults()[i].GetError() != nil:
			e := resp.GetResults()[i].GetError()
			errs[i] = &client.Error{Status: e.GetStatus(), Message: e.GetMessage(), Field: e.GetField()}
		}
	}
	return errs
}

// record counts a request's tasks: during warmup only their errors.
func (t *tally) record(d time.Duration, errs []error, measured bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	acked := 0
	for _, err := range errs {
		if err == nil {
			acked++
			continue
		}
		t.errs[errorKind(err)]++
		if t.first == nil {
			t.first = err
		}
	}
	if !measured || acked == 0 {
		return
	}
	t.acked += int64(acked)
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

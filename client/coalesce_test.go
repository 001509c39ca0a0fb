package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// gatherer is a Client on a fake server whose coalescer waits for the
// request in flight rather than a linger, so tests decide what is
// gathered: the first call goes alone and is held by the fake; the calls
// made meanwhile wait in the coalescer until the test releases it.
func gatherer(t *testing.T, f *fakeServer, opts ...Option) *Client {
	t.Helper()
	c := dialFake(t, f, opts...)
	c.batcher.linger = time.Hour
	f.set(func() { f.hold = true })
	f.received = make(chan *boomerangv1.Request, 100)
	return c
}

// scheduleAsync runs Schedule in a goroutine and returns its outcome's
// channel.
func scheduleAsync(ctx context.Context, c *Client, payload string, opts ...ScheduleOption) chan answer {
	out := make(chan answer, 1)
	go func() {
		task, err := c.Schedule(ctx, []byte(payload), opts...)
		out <- answer{task, err}
	}()
	return out
}

func (b *coalescer) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

func receive(t *testing.T, f *fakeServer) *boomerangv1.Request {
	t.Helper()
	select {
	case r := <-f.received:
		return r
	case <-time.After(waitLimit):
		t.Fatal("no request arrived")
		return nil
	}
}

func await(t *testing.T, ch chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(waitLimit):
		t.Fatal("no answer")
		return answer{}
	}
}

// Calls made while a request is in flight leave together, and each gets
// its own task, payload included, or its own error: one invalid task
// fails only its caller.
func TestCoalescingGathersAndIsolatesErrors(t *testing.T) {
	f := startFake(t)
	c := gatherer(t, f)
	ctx := testContext(t)
	first := scheduleAsync(ctx, c, "first")
	if r := receive(t, f); r.GetRegisterTask() == nil {
		t.Fatalf("the first call went as %v, want RegisterTask", r)
	}
	var calls []chan answer
	for i := range 8 {
		var opts []ScheduleOption
		if i == 3 {
			opts = append(opts, Every(-time.Second)) // the fake refuses it
		}
		calls = append(calls, scheduleAsync(ctx, c, fmt.Sprint("call ", i), opts...))
		waitFor(t, "the call to wait", func() bool { return c.batcher.waiting() == i+1 })
	}
	f.release() // answers the first call; the others leave then
	if a := await(t, first); a.err != nil || string(a.task.GetPayload()) != "first" {
		t.Fatalf("first call: %v, %v", a.task, a.err)
	}
	if r := receive(t, f); len(r.GetRegisterTasks().GetTasks()) != 8 {
		t.Fatalf("gathered request %v, want 8 tasks", r)
	}
	for i, ch := range calls {
		a := await(t, ch)
		var e *Error
		switch {
		case i == 3:
			if !errors.As(a.err, &e) || !errors.Is(a.err, ErrInvalidRequest) || e.Field != "repeat_interval_ms" || a.task != nil {
				t.Errorf("invalid call: %v, %v", a.task, a.err)
			}
		case a.err != nil || string(a.task.GetPayload()) != fmt.Sprint("call ", i) || a.task.GetId() == 0:
			t.Errorf("call %d: %v, %v", i, a.task, a.err)
		}
	}
}

// A caller whose context ends before its call is sent withdraws it; one
// whose context ends after stops waiting, and the request goes on for
// the others.
func TestCoalescingCancellation(t *testing.T) {
	f := startFake(t)
	c := gatherer(t, f)
	ctx := testContext(t)
	first := scheduleAsync(ctx, c, "first")
	receive(t, f)
	ctxB, cancelB := context.WithCancel(ctx)
	ctxC, cancelC := context.WithCancel(ctx)
	b := scheduleAsync(ctxB, c, "b")
	waitFor(t, "b to wait", func() bool { return c.batcher.waiting() == 1 })
	cc := scheduleAsync(ctxC, c, "c")
	d := scheduleAsync(ctx, c, "d")
	waitFor(t, "c and d to wait", func() bool { return c.batcher.waiting() == 3 })
	cancelB()
	if a := await(t, b); !errors.Is(a.err, context.Canceled) || !strings.Contains(a.err.Error(), "waiting to be sent") {
		t.Fatalf("b cancelled while waiting: %v", a.err)
	}
	if n := c.batcher.waiting(); n != 2 {
		t.Fatalf("%d calls wait after b left, want 2", n)
	}
	c.batcher.expire() // as the linger would
	if r := receive(t, f); len(r.GetRegisterTasks().GetTasks()) != 2 {
		t.Fatalf("sent %v, want c and d", r)
	}
	cancelC()
	if a := await(t, cc); !errors.Is(a.err, context.Canceled) || !strings.Contains(a.err.Error(), "waiting for the response") {
		t.Fatalf("c cancelled while sent: %v", a.err)
	}
	f.release()
	for name, ch := range map[string]chan answer{"first": first, "d": d} {
		if a := await(t, ch); a.err != nil || string(a.task.GetPayload()) != name {
			t.Fatalf("%s: %v, %v", name, a.task, a.err)
		}
	}
	// b never reached the server; c did, as a cancelled call may.
	f.mu.Lock()
	defer f.mu.Unlock()
	var payloads []string
	for _, task := range f.tasks {
		payloads = append(payloads, string(task.GetPayload()))
	}
	slices.Sort(payloads)
	if got := strings.Join(payloads, " "); got != "c d first" {
		t.Fatalf("the server holds %q", got)
	}
}

// When every caller of a sent request has left, the request is
// abandoned: its goroutine ends without an answer.
func TestCoalescingAbandonsWhenAllLeave(t *testing.T) {
	f := startFake(t)
	c := gatherer(t, f)
	ctx := testContext(t)
	scheduleAsync(ctx, c, "first")
	receive(t, f)
	short, cancel := context.WithCancel(ctx)
	calls := []chan answer{scheduleAsync(short, c, "a"), scheduleAsync(short, c, "b")}
	waitFor(t, "a and b to wait", func() bool { return c.batcher.waiting() == 2 })
	c.batcher.expire()
	receive(t, f)
	cancel()
	for _, ch := range calls {
		if a := await(t, ch); !errors.Is(a.err, context.Canceled) {
			t.Fatalf("a cancelled caller: %v", a.err)
		}
	}
	waitFor(t, "the gathered request to be given up", func() bool {
		c.batcher.mu.Lock()
		defer c.batcher.mu.Unlock()
		return c.batcher.inFlight == 1 // the first call, still held
	})
	f.release()
}

// With coalescing off, and for calls with an idempotency key, every call
// is a RegisterTask of its own.
func TestCoalescingOffAndKeyedCallsGoAlone(t *testing.T) {
	for name, tc := range map[string]struct {
		opt  Option
		keys bool
	}{
		"linger 0": {opt: WithCoalescing(0)},
		"keyed":    {opt: WithCoalescing(time.Millisecond), keys: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := startFake(t)
			c := dialFake(t, f, tc.opt)
			if name == "linger 0" && c.batcher != nil {
				t.Fatal("WithCoalescing(0) left coalescing on")
			}
			ctx := testContext(t)
			var wg sync.WaitGroup
			for i := range 200 {
				wg.Go(func() {
					var opts []ScheduleOption
					if tc.keys {
						opts = append(opts, WithIdempotencyKey(fmt.Sprint("k", i)))
					}
					if _, err := c.Schedule(ctx, []byte("x"), opts...); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.batches) != 0 || len(f.tasks) != 200 {
				t.Fatalf("%d tasks, gathered requests %v", len(f.tasks), f.batches)
			}
		})
	}
}

// A server without RegisterTasks refuses it as an unknown operation:
// those calls go again one by one, and so do all later ones.
func TestCoalescingFallsBackForOldServers(t *testing.T) {
	f := startFake(t)
	f.set(func() { f.noBatches = true })
	c := gatherer(t, f)
	ctx := testContext(t)
	first := scheduleAsync(ctx, c, "first")
	receive(t, f)
	calls := []chan answer{scheduleAsync(ctx, c, "a"), scheduleAsync(ctx, c, "b")}
	waitFor(t, "a and b to wait", func() bool { return c.batcher.waiting() == 2 })
	f.release()
	for i, ch := range append(calls, first) {
		if a := await(t, ch); a.err != nil || a.task == nil {
			t.Fatalf("call %d: %v, %v", i, a.task, a.err)
		}
	}
	if !c.batcher.off.Load() {
		t.Fatal("coalescing still on after RegisterTasks was refused")
	}
}

// Gathered requests stay within the frame limit and MaxBatch; a call too
// large for a frame is refused as before, without being sent.
func TestCoalescingSplits(t *testing.T) {
	f := startFake(t)
	f.maxFrame = 4096
	c := gatherer(t, f)
	ctx := testContext(t)
	first := scheduleAsync(ctx, c, "first")
	receive(t, f)
	payload := strings.Repeat("p", 1000)
	var calls []chan answer
	for i := range 10 {
		calls = append(calls, scheduleAsync(ctx, c, payload))
		waitFor(t, "the call to wait or leave", func() bool { return c.batcher.waiting() == i%3+1 })
	}
	if _, err := c.Schedule(ctx, make([]byte, 5000)); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("a call over the frame limit: %v", err)
	}
	f.release()
	c.batcher.expire()
	sizes := 0
	for sizes < 10 {
		r := receive(t, f)
		if size := proto.Size(r); size > 4096 {
			t.Fatalf("a request of %d bytes", size)
		}
		sizes += max(len(r.GetRegisterTasks().GetTasks()), 1)
	}
	for _, ch := range append(calls, first) {
		if a := await(t, ch); a.err != nil {
			t.Fatal(a.err)
		}
	}
}

// ScheduleBatch cuts any number of tasks into requests of at most
// MaxBatch and the frame limit, and answers each task in order.
func TestScheduleBatchSplits(t *testing.T) {
	f := startFake(t)
	f.maxFrame = 64 << 10
	c := dialFake(t, f)
	ctx := testContext(t)
	var tasks []Task
	for i := range 2500 {
		tasks = append(tasks, NewTask(fmt.Appendf(nil, "%d", i)))
	}
	tasks[7].Options = []ScheduleOption{Every(-time.Second)}
	tasks = append(tasks, NewTask(make([]byte, 70<<10)))
	res, err := c.ScheduleBatch(ctx, tasks...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		switch {
		case i == 7 || i == 2500:
			if !errors.Is(r.Err, ErrInvalidRequest) || r.Task != nil {
				t.Errorf("task %d: %+v", i, r)
			}
		case r.Err != nil || r.Task.GetId() == 0 || !r.Created || len(r.Task.GetPayload()) != 0:
			t.Errorf("task %d: %+v", i, r)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	for _, n := range f.batches {
		if n > MaxBatch {
			t.Errorf("a request of %d tasks", n)
		}
		total += n
	}
	if total != 2500 || len(f.tasks) != 2499 {
		t.Fatalf("%d tasks sent in %v, %d stored", total, f.batches, len(f.tasks))
	}
}

package client_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// These run against the real server of TestMain.

const waitLimit = 30 * time.Second

var clientSeq atomic.Int64

// newClient registers a client of its own and connects as it.
func newClient(tb testing.TB, opts ...client.Option) *client.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	admin, err := client.Dial(ctx, addr, client.Credentials{ClientID: adminID, Password: adminPassword})
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	id := fmt.Sprintf("schedule-%d", clientSeq.Add(1))
	_, err = admin.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{
		ClientId: id, Password: id + "-password",
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_UDP, Endpoint: "127.0.0.1:9"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: id, Password: id + "-password"}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// batchedTasks reads the server's count of tasks answered in
// RegisterTasks requests with status ("OK", "INVALID_REQUEST").
func batchedTasks(tb testing.TB, status string) int {
	return int(metric(tb, `boomerang_batch_tasks_total{status="`+status+`"}`))
}

// metric reads one sample of the server's metrics; 0 when it has none.
func metric(tb testing.TB, sample string) float64 {
	tb.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// callers runs n goroutines that start together and waits for them.
func callers(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// Concurrent calls on one client are gathered into RegisterTasks
// requests; each caller gets the task it would have got alone, payload
// included, and an invalid task fails only its own caller. Rounds of
// calls run until the server has seen an invalid task in a batch.
func TestScheduleGathersConcurrentCalls(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	okBefore, badBefore := batchedTasks(t, "OK"), batchedTasks(t, "INVALID_REQUEST")
	const n, bad = 64, 5
	for round := 0; batchedTasks(t, "INVALID_REQUEST") == badBefore; round++ {
		if ctx.Err() != nil {
			t.Fatalf("after %d rounds, no invalid task was gathered with others", round)
		}
		tasks := make([]*boomerangv1.Task, n)
		errs := make([]error, n)
		callers(n, func(i int) {
			opts := []client.ScheduleOption{client.After(time.Hour), client.InGroup(fmt.Sprint("g", i%4))}
			if i == bad {
				opts = append(opts, client.Every(-time.Second))
			}
			tasks[i], errs[i] = c.Schedule(ctx, fmt.Appendf(nil, "round %d call %d", round, i), opts...)
		})
		for i := range n {
			var e *client.Error
			switch {
			case i == bad:
				if !errors.As(errs[i], &e) || !errors.Is(errs[i], client.ErrInvalidRequest) || e.Field != "repeat_interval_ms" || tasks[i] != nil {
					t.Fatalf("round %d: the invalid call: %v, %v", round, tasks[i], errs[i])
				}
			case errs[i] != nil:
				t.Fatalf("round %d call %d: %v", round, i, errs[i])
			case string(tasks[i].GetPayload()) != fmt.Sprintf("round %d call %d", round, i):
				t.Fatalf("round %d call %d got %v", round, i, tasks[i])
			}
		}
		// What a gathered call returns is what the server holds.
		got, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: tasks[0].GetId()})
		if err != nil || !proto.Equal(got.GetTask(), tasks[0]) {
			t.Fatalf("Schedule returned %v, the server holds %v (%v)", tasks[0], got.GetTask(), err)
		}
	}
	if batchedTasks(t, "OK") == okBefore {
		t.Fatal("no valid task was gathered")
	}
}

// A caller whose context ends gets the context's error or its task;
// the others are not affected.
func TestScheduleGatheredCancellation(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for round := range 20 {
		callers(64, func(i int) {
			callCtx := ctx
			if i%3 == 0 {
				var stop context.CancelFunc
				callCtx, stop = context.WithCancel(ctx)
				time.AfterFunc(time.Duration(i)*20*time.Microsecond, stop)
			}
			task, err := c.Schedule(callCtx, []byte("p"), client.After(time.Hour))
			switch {
			case i%3 == 0 && err != nil && !errors.Is(err, context.Canceled):
				t.Errorf("round %d: cancelled call %d: %v", round, i, err)
			case i%3 != 0 && (err != nil || task.GetId() == 0):
				t.Errorf("round %d call %d: %v, %v", round, i, task, err)
			}
		})
	}
}

// With coalescing off, every call is a request of its own.
func TestScheduleLingerZero(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	c := newClient(t, client.WithCoalescing(0))
	before := batchedTasks(t, "OK")
	callers(64, func(i int) {
		if _, err := c.Schedule(context.Background(), []byte("p"), client.After(time.Hour)); err != nil {
			t.Error(err)
		}
	})
	if after := batchedTasks(t, "OK"); after != before {
		t.Fatalf("%d tasks went in batches with coalescing off", after-before)
	}
}

func TestScheduleBatch(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var tasks []client.Task
	for i := range 2100 {
		tasks = append(tasks, client.NewTask(fmt.Appendf(nil, "%d", i), client.After(time.Hour), client.InGroup(fmt.Sprint("g", i%7))))
	}
	tasks[1500].Options = append(tasks[1500].Options, client.Every(-time.Second))
	res, err := c.ScheduleBatch(ctx, tasks...)
	if err != nil {
		t.Fatal(err)
	}
	lastSeq := map[string]uint64{} // a group's tasks keep their order across requests
	for i, r := range res {
		if i == 1500 {
			if !errors.Is(r.Err, client.ErrInvalidRequest) {
				t.Fatalf("the invalid task: %+v", r)
			}
			continue
		}
		if r.Err != nil || !r.Created || r.Task.GetGroup() != fmt.Sprint("g", i%7) || r.Task.GetSeq() <= lastSeq[r.Task.GetGroup()] {
			t.Fatalf("task %d: %+v", i, r)
		}
		lastSeq[r.Task.GetGroup()] = r.Task.GetSeq()
		if i%500 == 0 {
			got, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: r.Task.GetId()})
			if err != nil || string(got.GetTask().GetPayload()) != fmt.Sprint(i) {
				t.Fatalf("task %d stored as %v (%v)", i, got, err)
			}
		}
	}
}

var benchCallers = flag.Int("schedule.callers", 64, "BenchmarkSchedule's concurrent callers")

// BenchmarkSchedule measures Schedule with many goroutines calling at
// once on one Client, against the real server of TestMain, client and
// server sharing the machine: each call alone (the baseline) and
// gathered into RegisterTasks requests.
//
//	go test -run '^$' -bench Schedule -benchtime 100000x ./client
func BenchmarkSchedule(b *testing.B) {
	for _, bc := range []struct {
		name   string
		linger time.Duration
	}{{"alone", 0}, {"gathered", client.DefaultLinger}, {"gathered-1ms", time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newClient(b, client.WithCoalescing(bc.linger))
			payload := make([]byte, 100)
			ctx := context.Background()
			b.SetParallelism(max(1, *benchCallers/runtime.GOMAXPROCS(0)))
			const batches = `boomerang_requests_total{operation="RegisterTasks",status="OK"}`
			tasksBefore, batchesBefore := batchedTasks(b, "OK"), metric(b, batches)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Schedule(ctx, payload, client.After(time.Hour)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
			b.StopTimer()
			// Calls that found nothing in flight went alone, as RegisterTask.
			if sent := metric(b, batches) - batchesBefore; sent > 0 {
				b.ReportMetric(float64(batchedTasks(b, "OK")-tasksBefore)/sent, "tasks/batch")
			}
			http.DefaultClient.CloseIdleConnections()
		})
	}
}

// A cron task is due at its first occurrence, and GetTask shows the ones
// after it.
func TestScheduleCron(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	task, err := c.Schedule(ctx, []byte("report"), client.Cron("0 9 * * MON-FRI", "Europe/Zurich"))
	if err != nil {
		t.Fatal(err)
	}
	zurich, err := time.LoadLocation("Europe/Zurich")
	if err != nil {
		t.Fatal(err)
	}
	due := time.UnixMilli(task.GetFireAtMs()).In(zurich)
	if due.Hour() != 9 || due.Minute() != 0 || due.Weekday() == time.Saturday || due.Weekday() == time.Sunday || !due.After(time.Now()) {
		t.Fatalf("first occurrence %v", due)
	}
	got, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: task.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if next := got.GetTask().GetNextFireAtMs(); len(next) == 0 || next[0] <= task.GetFireAtMs() {
		t.Fatalf("next occurrences %v after %d", next, task.GetFireAtMs())
	}
	_, err = c.Schedule(ctx, nil, client.Cron("0 9 * * *", "Nowhere/Land"))
	var e *client.Error
	if !errors.As(err, &e) || e.Field != "time_zone" {
		t.Fatalf("unknown time zone: %v", err)
	}
}

// A registration with a replace key replaces the waiting task, and the
// response says so.
func TestScheduleReplacing(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	first, err := c.Schedule(ctx, []byte("v1"), client.Replacing("reindex"), client.Debounce(time.Hour, 2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	req := &boomerangv1.RegisterTaskRequest{Payload: []byte("v2"), ReplaceKey: "reindex", DebounceMs: time.Hour.Milliseconds()}
	resp, err := c.RegisterTask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetReplaced() || resp.GetCreated() || resp.GetTask().GetId() != first.GetId() || string(resp.GetTask().GetPayload()) != "v2" {
		t.Fatalf("second registration: %v", resp)
	}
	if resp.GetTask().GetFireAtMs() < first.GetFireAtMs() {
		t.Fatalf("debounced due %d before the first's %d", resp.GetTask().GetFireAtMs(), first.GetFireAtMs())
	}
}

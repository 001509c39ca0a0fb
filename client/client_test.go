package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

const waitLimit = 20 * time.Second

var testCreds = Credentials{ClientID: "tester", Password: "secret-pw"}

func dialFake(t *testing.T, f *fakeServer, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := Dial(ctx, f.addr(), testCreds, append([]Option{WithReconnectBackoff(time.Millisecond, 10*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func TestDialLogsInAndLearnsLimits(t *testing.T) {
	f := startFake(t)
	f.maxFrame = 4096
	c := dialFake(t, f)
	if s := c.Session(); s.ID != "s1" || time.Until(s.ExpiresAt) < 50*time.Minute {
		t.Fatalf("session after Dial = %+v", s)
	}
	if got := c.maxFrame.Load(); got != 4096 {
		t.Fatalf("frame limit = %d, want 4096", got)
	}
	// Over the limit: refused locally, the connection stays up.
	_, err := c.Schedule(testContext(t), make([]byte, 5000))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalidRequest) || e.Field != "payload" {
		t.Fatalf("oversize Schedule: %v", err)
	}
	if _, err := c.Schedule(testContext(t), make([]byte, 100)); err != nil {
		t.Fatalf("Schedule after a refused one: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	f := startFake(t)
	ctx := testContext(t)
	_, err := Dial(ctx, f.addr(), Credentials{ClientID: "tester", Password: "wrong"})
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("wrong password: %v", err)
	}
	_, err = Dial(ctx, "127.0.0.1", testCreds)
	if err == nil {
		t.Fatal("Dial without a port succeeded")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Dial(ctx, addr, testCreds); err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
	// A saved session the server does not know, without credentials.
	_, err = Dial(ctx, f.addr(), Credentials{}, WithSession(Session{ID: "nope"}))
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("unknown saved session: %v", err)
	}
}

// Thousands of concurrent calls share one connection, each in a request
// of its own or gathered with others; the server answers each batch of
// requests in reverse order, and every caller gets its own answer.
func TestPipelining(t *testing.T) {
	t.Run("alone", func(t *testing.T) { testPipelining(t, WithCoalescing(0)) })
	t.Run("gathered", func(t *testing.T) { testPipelining(t, WithCoalescing(time.Millisecond)) })
}

func testPipelining(t *testing.T, coalescing Option) {
	f := startFake(t)
	f.set(func() { f.reverse = true })
	c := dialFake(t, f, WithMaxInFlight(1000), coalescing)
	ctx := testContext(t)
	const n = 5000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("payload %d", i)
			task, err := c.Schedule(ctx, []byte(want))
			if err == nil && string(task.GetPayload()) != want {
				err = fmt.Errorf("call %d got the answer for %q", i, task.GetPayload())
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.tasks) != n || len(f.conns) != 1 {
		t.Fatalf("server has %d tasks over %d connections, want %d over 1", len(f.tasks), len(f.conns), n)
	}
}

// Responses held back and released in reverse order still reach their
// callers, and the in-flight bound holds further calls back. Each call is
// a request of its own here.
func TestOutOfOrderAndInFlightBound(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f, WithMaxInFlight(8), WithCoalescing(0))
	f.set(func() { f.hold = true })
	f.received = make(chan *boomerangv1.Request, 100)
	ctx := testContext(t)
	var wg sync.WaitGroup
	results := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			task, err := c.Schedule(ctx, []byte{byte(i)})
			if err == nil && task.GetPayload()[0] != byte(i) {
				err = fmt.Errorf("call %d got payload %v", i, task.GetPayload())
			}
			results[i] = err
		})
	}
	for range 8 {
		select {
		case <-f.received:
		case <-time.After(waitLimit):
			t.Fatal("requests did not arrive")
		}
	}
	// A ninth call finds no slot.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := c.Schedule(short, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call beyond the in-flight bound: %v", err)
	}
	f.release()
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

func TestErrorsMatchStatus(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	ctx := testContext(t)
	_, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: 99})
	var e *Error
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &e) || e.Message != "task 99 not found" || StatusOf(err) != boomerangv1.Status_STATUS_NOT_FOUND {
		t.Fatalf("GetTask(99): %v", err)
	}
	if err.Error() != "client: not found: task 99 not found" {
		t.Errorf("message %q", err.Error())
	}
	_, err = c.Schedule(ctx, nil, Every(-time.Second))
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalidRequest) || e.Field != "repeat_interval_ms" {
		t.Fatalf("negative interval: %v", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Fatal("an INVALID_REQUEST error matches ErrNotFound")
	}
	for s, want := range statusErrors {
		if err := error(&Error{Status: s}); !errors.Is(err, want) {
			t.Errorf("status %v does not match %v", s, want)
		}
	}
	if !errors.Is(&Error{Status: 77}, ErrUnknownStatus) || StatusOf(nil) != boomerangv1.Status_STATUS_OK || StatusOf(errFake) != 0 {
		t.Error("unknown status or StatusOf misreported")
	}
	// An empty body left out by the server is fine for an empty response.
	task, err := c.Schedule(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, task.GetId()); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
}

// An expired session is replaced by a new login, and the refused request
// is sent again.
func TestSessionExpiredLogsInAgain(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	f.set(func() { f.expireNext = true })
	if _, err := c.Schedule(testContext(t), []byte("x")); err != nil {
		t.Fatalf("Schedule across an expiry: %v", err)
	}
	f.mu.Lock()
	logins := f.logins
	f.mu.Unlock()
	if logins != 2 || c.Session().ID != "s2" {
		t.Fatalf("logins = %d, session %q; want 2, s2", logins, c.Session().ID)
	}
}

// A server that forgot every session (a restart) gets a new login too.
func TestUnknownSessionLogsInAgain(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	f.set(func() { clear(f.sessions) })
	if _, err := c.Schedule(testContext(t), []byte("x")); err != nil {
		t.Fatalf("Schedule after the server forgot the session: %v", err)
	}
}

// Without credentials a refused session is final.
func TestSavedSessionWithoutCredentials(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	saved := c.Session()
	ctx := testContext(t)
	c2, err := Dial(ctx, f.addr(), Credentials{}, WithSession(saved))
	if err != nil {
		t.Fatalf("Dial with a saved session: %v", err)
	}
	defer c2.Close()
	if _, err := c2.Schedule(ctx, nil); err != nil {
		t.Fatalf("Schedule with the saved session: %v", err)
	}
	f.set(func() { f.sessions[saved.ID] = time.Now().Add(-time.Second) })
	if _, err := c2.Schedule(ctx, nil); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("Schedule with an expired saved session: %v", err)
	}
}

// The session is refreshed before it expires, again and again, and calls
// keep working throughout.
func TestSessionRefresh(t *testing.T) {
	f := startFake(t)
	// Refreshes come at two thirds of the life: the last third is the
	// margin a loaded machine has to run one before the session expires
	// (and the client logs in again).
	f.ttl = 1500 * time.Millisecond
	c := dialFake(t, f)
	ctx := testContext(t)
	for i := range 3 {
		select {
		case id := <-f.refreshes:
			// The refreshed session may not be adopted yet; a call made
			// now still succeeds either way.
			if _, err := c.Schedule(ctx, nil); err != nil {
				t.Fatalf("Schedule after refresh %d (%s): %v", i, id, err)
			}
		case <-time.After(waitLimit):
			t.Fatalf("no refresh %d", i)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logins != 1 {
		t.Fatalf("logins = %d, want 1: refreshes should keep the session alive", f.logins)
	}
}

// Dropping the connection fails the calls in flight with
// ErrConnectionLost; the Client reconnects and later calls succeed.
func TestReconnect(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	f.waitAccepted(t)
	f.set(func() { f.hold = true })
	f.received = make(chan *boomerangv1.Request, 10)
	ctx := testContext(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Schedule(ctx, []byte("in flight"))
		errc <- err
	}()
	select {
	case <-f.received:
	case <-time.After(waitLimit):
		t.Fatal("request did not arrive")
	}
	f.set(func() { f.hold = false; f.held = nil })
	f.dropAll()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("in-flight call: %v, want ErrConnectionLost", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("in-flight call did not fail")
	}
	f.waitAccepted(t)
	if _, err := c.Schedule(ctx, []byte("after")); err != nil {
		t.Fatalf("Schedule after reconnecting: %v", err)
	}
}

// Calls made while the server is down wait for it, within their context.
func TestCallsWaitForReconnection(t *testing.T) {
	f := startFake(t)
	addr := f.addr()
	c := dialFake(t, f)
	f.close()
	waitFor(t, "the Client to notice the connection is gone", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.cur == nil
	})
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := c.Schedule(short, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call while the server is down: %v", err)
	}
	// A new server on the same port (sessions forgotten): the Client
	// reconnects and logs in again.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s again: %v", addr, err)
	}
	f2 := &fakeServer{
		t: t, ln: ln, ttl: time.Hour, password: "secret-pw",
		sessions: map[string]time.Time{}, tasks: map[uint64]*boomerangv1.Task{},
		conns: map[net.Conn]bool{}, accepted: make(chan struct{}, 100),
		refreshes: make(chan string, 100), maxFrame: 1 << 20,
	}
	f2.wg.Add(1)
	go f2.accept()
	t.Cleanup(f2.close)
	if _, err := c.Schedule(testContext(t), []byte("back")); err != nil {
		t.Fatalf("call after the server came back: %v", err)
	}
}

// A connection error frame (request id 0) is what the in-flight calls
// fail with.
func TestErrorFrame(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	f.onRequest = func(nc net.Conn, req *boomerangv1.Request) bool {
		if string(req.GetRegisterTask().GetPayload()) != "poison" {
			return false
		}
		_, _ = protodelim.MarshalTo(nc, fail(0, boomerangv1.Status_STATUS_INVALID_REQUEST, "broken frame", ""))
		_ = nc.Close()
		return true
	}
	_, err := c.Schedule(testContext(t), []byte("poison"))
	var e *Error
	if !errors.Is(err, ErrConnectionLost) || !errors.As(err, &e) || e.Message != "broken frame" {
		t.Fatalf("call on a connection closed with an error frame: %v", err)
	}
	if _, err := c.Schedule(testContext(t), []byte("fine")); err != nil {
		t.Fatalf("call after the error frame: %v", err)
	}
}

// A call whose response never comes ends with its context; its late
// response would be dropped, and the connection stays usable.
func TestContextDeadline(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	f.set(func() {
		f.ignore = func(r *boomerangv1.Request) bool { return string(r.GetRegisterTask().GetPayload()) == "lost" }
	})
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := c.Schedule(short, []byte("lost"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered call: %v", err)
	}
	if _, err := c.Schedule(testContext(t), []byte("fine")); err != nil {
		t.Fatalf("next call: %v", err)
	}
}

func TestClose(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	f.set(func() { f.hold = true })
	f.received = make(chan *boomerangv1.Request, 10)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Schedule(context.Background(), nil)
		errc <- err
	}()
	<-f.received
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("call in flight at Close: %v", err)
	}
	if _, err := c.Schedule(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestTasksPages(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	ctx := testContext(t)
	for i := range 25 {
		if _, err := c.Schedule(ctx, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []uint64
	for task, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{PageSize: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, task.GetId())
	}
	if len(got) != 25 || got[0] != 1 || got[24] != 25 {
		t.Fatalf("Tasks yielded %v", got)
	}
	n := 0
	for range c.Tasks(ctx, &boomerangv1.ListTasksRequest{PageSize: 7}) {
		n++
		if n == 3 {
			break
		}
	}
}

func TestScheduleOptions(t *testing.T) {
	at := time.UnixMilli(1_900_000_000_000)
	req := &boomerangv1.RegisterTaskRequest{}
	for _, o := range []ScheduleOption{At(at), Every(5 * time.Minute), InGroup("g"), WithIdempotencyKey("k"),
		WithMode(boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE), WithCallback(&boomerangv1.Callback{Endpoint: "e"}),
		WithRetry(&boomerangv1.RetryPolicy{MaxAttempts: 3}), Cron("0 9 * * MON-FRI", "Europe/Zurich"),
		Replacing("r"), Debounce(time.Second, time.Minute)} {
		o(req)
	}
	if req.GetFireAtMs() != at.UnixMilli() || req.GetRepeatIntervalMs() != 300_000 || req.GetGroup() != "g" ||
		req.GetIdempotencyKey() != "k" || req.GetMode() != boomerangv1.DispatchMode_DISPATCH_MODE_IMMEDIATE ||
		req.GetCallback().GetEndpoint() != "e" || req.GetRetry().GetMaxAttempts() != 3 ||
		req.GetCron() != "0 9 * * MON-FRI" || req.GetTimeZone() != "Europe/Zurich" ||
		req.GetReplaceKey() != "r" || req.GetDebounceMs() != 1000 || req.GetMaxWaitMs() != 60_000 {
		t.Fatalf("options gave %v", req)
	}
	After(90 * time.Second)(req)
	if req.GetDelayMs() != 90_000 || req.GetFireAtMs() != 0 {
		t.Fatalf("After gave %v", req)
	}
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// The page iterators send every page with the caller's whole query (a
// search, due order) and the previous page's cursor, its due time
// included.
func TestPagesKeepTheQuery(t *testing.T) {
	f := startFake(t)
	c := dialFake(t, f)
	var mu sync.Mutex
	var lists []*boomerangv1.ListTasksRequest
	var dls []*boomerangv1.ListDeadLettersRequest
	f.onRequest = func(nc net.Conn, req *boomerangv1.Request) bool {
		resp := &boomerangv1.Response{RequestId: req.GetRequestId()}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case req.GetListTasks() != nil:
			lists = append(lists, req.GetListTasks())
			page := &boomerangv1.ListTasksResponse{Tasks: []*boomerangv1.Task{{Id: uint64(len(lists))}}}
			if len(lists) == 1 {
				page.NextPageToken, page.NextPageDueMs = 1, 5000
			}
			resp.Body = &boomerangv1.Response_ListTasks{ListTasks: page}
		case req.GetListDeadLetters() != nil:
			dls = append(dls, req.GetListDeadLetters())
			page := &boomerangv1.ListDeadLettersResponse{DeadLetters: []*boomerangv1.DeadLetter{{Id: uint64(len(dls))}}}
			if len(dls) == 1 {
				page.NextPageToken = 1
			}
			resp.Body = &boomerangv1.Response_ListDeadLetters{ListDeadLetters: page}
		default:
			return false
		}
		w := &connWriter{bw: bufio.NewWriter(nc)}
		w.write(resp)
		return true
	}
	ctx := testContext(t)
	for _, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{PayloadContains: []byte("x"), Order: boomerangv1.TaskOrder_TASK_ORDER_DUE, PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range c.DeadLetters(ctx, &boomerangv1.ListDeadLettersRequest{ErrorContains: "refused", Group: "g", PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lists) != 2 || len(dls) != 2 {
		t.Fatalf("%d task pages and %d dead letter pages, want 2 of each", len(lists), len(dls))
	}
	if l := lists[1]; string(l.GetPayloadContains()) != "x" || l.GetOrder() != boomerangv1.TaskOrder_TASK_ORDER_DUE ||
		l.GetPageToken() != 1 || l.GetPageDueMs() != 5000 {
		t.Errorf("second task page asked %v", l)
	}
	if d := dls[1]; d.GetErrorContains() != "refused" || d.GetGroup() != "g" || d.GetPageToken() != 1 {
		t.Errorf("second dead letter page asked %v", d)
	}
}

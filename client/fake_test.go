package client

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// fakeServer speaks the raw TCP protocol with just enough behaviour to
// drive the Client through its paths: sessions that expire, a task map,
// responses held back or reordered, connections dropped on demand, and
// error frames. The real server is exercised in e2e.
type fakeServer struct {
	t  *testing.T
	ln net.Listener
	wg sync.WaitGroup

	mu         sync.Mutex
	ttl        time.Duration
	sessions   map[string]time.Time // id → expiry
	nextSess   int
	logins     int
	refreshes  chan string // new session ids from RefreshSession
	tasks      map[uint64]*boomerangv1.Task
	nextTask   uint64
	conns      map[net.Conn]bool
	accepted   chan struct{} // one per accepted connection
	hold       bool          // keep responses until release
	held       []held
	reverse    bool // answer each batch of requests in reverse order
	ignore     func(*boomerangv1.Request) bool
	maxFrame   uint64
	received   chan *boomerangv1.Request                 // every request, if set
	onRequest  func(net.Conn, *boomerangv1.Request) bool // true: handled
	password   string
	expireNext bool                           // the next task request gets SESSION_EXPIRED
	batches    []int                          // tasks of each RegisterTasks request
	noBatches  bool                           // refuse RegisterTasks as a server without it does
	routes     *boomerangv1.GetRoutesResponse // the routing view; nil: standalone
	fetches    int                            // GetRoutes requests
}

type held struct {
	w    *connWriter
	resp *boomerangv1.Response
}

// connWriter serialises writes to one connection.
type connWriter struct {
	mu sync.Mutex
	bw *bufio.Writer
}

func (w *connWriter) write(resps ...*boomerangv1.Response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range resps {
		if _, err := protodelim.MarshalTo(w.bw, r); err != nil {
			return
		}
	}
	_ = w.bw.Flush()
}

func startFake(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{
		t: t, ln: ln, ttl: time.Hour, password: "secret-pw",
		sessions: map[string]time.Time{}, tasks: map[uint64]*boomerangv1.Task{},
		conns: map[net.Conn]bool{}, accepted: make(chan struct{}, 100),
		refreshes: make(chan string, 100), maxFrame: 1 << 20,
	}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) close() {
	_ = f.ln.Close()
	f.dropAll()
	f.wg.Wait()
}

// dropAll closes every open connection.
func (f *fakeServer) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
	}
}

func (f *fakeServer) accept() {
	defer f.wg.Done()
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[nc] = true
		f.mu.Unlock()
		f.accepted <- struct{}{}
		f.wg.Add(1)
		go f.serve(nc)
	}
}

func (f *fakeServer) serve(nc net.Conn) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, nc)
		f.mu.Unlock()
		_ = nc.Close()
	}()
	br := bufio.NewReader(nc)
	w := &connWriter{bw: bufio.NewWriter(nc)}
	var batch []*boomerangv1.Response
	for {
		req := new(boomerangv1.Request)
		if err := protodelim.UnmarshalFrom(br, req); err != nil {
			return
		}
		if req.GetGetRoutes() != nil {
			// Standalone unless told otherwise: the Client asks once,
			// before its first routable request.
			f.mu.Lock()
			view := f.routes
			f.fetches++
			f.mu.Unlock()
			if view == nil {
				view = &boomerangv1.GetRoutesResponse{Standalone: true, Shards: 64}
			}
			w.write(&boomerangv1.Response{RequestId: req.GetRequestId(), Body: &boomerangv1.Response_GetRoutes{GetRoutes: view}})
			continue
		}
		if f.received != nil {
			f.received <- req
		}
		if f.onRequest != nil && f.onRequest(nc, req) {
			continue
		}
		f.mu.Lock()
		ign := f.ignore != nil && f.ignore(req)
		f.mu.Unlock()
		if ign {
			continue
		}
		resp := f.handle(req)
		f.mu.Lock()
		if f.hold {
			f.held = append(f.held, held{w, resp})
			f.mu.Unlock()
			continue
		}
		reverse := f.reverse
		f.mu.Unlock()
		batch = append(batch, resp)
		if br.Buffered() > 0 && reverse {
			continue // answer the whole batch at once, last first
		}
		for i, j := 0, len(batch)-1; reverse && i < j; i, j = i+1, j-1 {
			batch[i], batch[j] = batch[j], batch[i]
		}
		w.write(batch...)
		batch = batch[:0]
	}
}

// release sends every held response, in reverse order.
func (f *fakeServer) release() {
	f.mu.Lock()
	hs := f.held
	f.held, f.hold = nil, false
	f.mu.Unlock()
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].w.write(hs[i].resp)
	}
}

func fail(id uint64, s boomerangv1.Status, msg, field string) *boomerangv1.Response {
	return &boomerangv1.Response{RequestId: id, Error: &boomerangv1.Error{Status: s, Message: msg, Field: field}}
}

func (f *fakeServer) handle(req *boomerangv1.Request) *boomerangv1.Response {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := req.GetRequestId()
	if login := req.GetLogin(); login != nil {
		if login.GetClientId() != "tester" || login.GetPassword() != f.password {
			return fail(id, boomerangv1.Status_STATUS_UNAUTHORIZED, "wrong client id or password", "")
		}
		f.logins++
		s, exp := f.newSession()
		return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_Login{Login: &boomerangv1.LoginResponse{SessionId: s, ExpiresAtMs: exp.UnixMilli()}}}
	}
	exp, ok := f.sessions[req.GetSessionId()]
	switch {
	case !ok:
		return fail(id, boomerangv1.Status_STATUS_UNAUTHORIZED, "unknown session", "")
	case time.Now().After(exp):
		return fail(id, boomerangv1.Status_STATUS_SESSION_EXPIRED, "session expired", "")
	}
	switch b := req.GetBody().(type) {
	case *boomerangv1.Request_RefreshSession:
		delete(f.sessions, req.GetSessionId())
		s, exp := f.newSession()
		f.refreshes <- s
		return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_RefreshSession{RefreshSession: &boomerangv1.RefreshSessionResponse{SessionId: s, ExpiresAtMs: exp.UnixMilli()}}}
	case *boomerangv1.Request_GetServerInfo:
		return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_GetServerInfo{GetServerInfo: &boomerangv1.GetServerInfoResponse{Version: "fake", MaxFrameBytes: f.maxFrame}}}
	case *boomerangv1.Request_RegisterTask:
		if f.expireNext {
			f.expireNext = false
			f.sessions[req.GetSessionId()] = time.Now().Add(-time.Second)
			return fail(id, boomerangv1.Status_STATUS_SESSION_EXPIRED, "session expired", "")
		}
		r := f.register(b.RegisterTask)
		if e := r.GetError(); e != nil {
			return &boomerangv1.Response{RequestId: id, Error: e}
		}
		return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_RegisterTask{RegisterTask: r.GetRegistered()}}
	case *boomerangv1.Request_RegisterTasks:
		if f.noBatches {
			return fail(id, boomerangv1.Status_STATUS_INVALID_REQUEST, "must hold one operation; none was set or it is unknown to this server", "body")
		}
		if f.expireNext {
			f.expireNext = false
			f.sessions[req.GetSessionId()] = time.Now().Add(-time.Second)
			return fail(id, boomerangv1.Status_STATUS_SESSION_EXPIRED, "session expired", "")
		}
		out := &boomerangv1.RegisterTasksResponse{}
		for _, t := range b.RegisterTasks.GetTasks() {
			r := f.register(t)
			if reg := r.GetRegistered(); reg != nil {
				// As the server does: the caller has the payload.
				reg.Task = proto.CloneOf(reg.Task)
				reg.Task.Payload = nil
			}
			out.Results = append(out.Results, r)
		}
		f.batches = append(f.batches, len(out.Results))
		return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_RegisterTasks{RegisterTasks: out}}
	case *boomerangv1.Request_GetTask:
		t, ok := f.tasks[b.GetTask.GetId()]
		if !ok {
			return fail(id, boomerangv1.Status_STATUS_NOT_FOUND, fmt.Sprintf("task %d not found", b.GetTask.GetId()), "")
		}
		return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_GetTask{GetTask: &boomerangv1.GetTaskResponse{Task: t}}}
	case *boomerangv1.Request_CancelTask:
		if _, ok := f.tasks[b.CancelTask.GetId()]; !ok {
			return fail(id, boomerangv1.Status_STATUS_NOT_FOUND, "no such task", "")
		}
		delete(f.tasks, b.CancelTask.GetId())
		return &boomerangv1.Response{RequestId: id} // an empty body left out
	case *boomerangv1.Request_ListTasks:
		return f.listTasks(id, b.ListTasks)
	}
	return fail(id, boomerangv1.Status_STATUS_INTERNAL, "not implemented by the fake", "")
}

// register stores a task, or refuses a negative repeat interval.
func (f *fakeServer) register(r *boomerangv1.RegisterTaskRequest) *boomerangv1.RegisterTaskResult {
	if r.GetRepeatIntervalMs() < 0 {
		return &boomerangv1.RegisterTaskResult{Result: &boomerangv1.RegisterTaskResult_Error{Error: &boomerangv1.Error{
			Status: boomerangv1.Status_STATUS_INVALID_REQUEST, Message: "must not be negative", Field: "repeat_interval_ms",
		}}}
	}
	f.nextTask++
	t := &boomerangv1.Task{Id: f.nextTask, Client: "tester", Payload: r.GetPayload(), Group: r.GetGroup()}
	f.tasks[t.Id] = t
	return &boomerangv1.RegisterTaskResult{Result: &boomerangv1.RegisterTaskResult_Registered{Registered: &boomerangv1.RegisterTaskResponse{Task: t, Created: true}}}
}

// listTasks pages through tasks by id.
func (f *fakeServer) listTasks(id uint64, q *boomerangv1.ListTasksRequest) *boomerangv1.Response {
	size := uint64(max(q.GetPageSize(), 1))
	out := &boomerangv1.ListTasksResponse{}
	for tid := max(q.GetPageToken(), 1); tid <= f.nextTask; tid++ {
		if t, ok := f.tasks[tid]; ok {
			if uint64(len(out.Tasks)) == size {
				out.NextPageToken = tid
				break
			}
			out.Tasks = append(out.Tasks, t)
		}
	}
	return &boomerangv1.Response{RequestId: id, Body: &boomerangv1.Response_ListTasks{ListTasks: out}}
}

func (f *fakeServer) newSession() (string, time.Time) {
	f.nextSess++
	s := fmt.Sprintf("s%d", f.nextSess)
	exp := time.Now().Add(f.ttl)
	f.sessions[s] = exp
	return s, exp
}

func (f *fakeServer) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// waitAccepted waits for the n-th connection from now on.
func (f *fakeServer) waitAccepted(t *testing.T) {
	t.Helper()
	select {
	case <-f.accepted:
	case <-time.After(waitLimit):
		t.Fatal("no connection accepted in time")
	}
}

var errFake = errors.New("fake")

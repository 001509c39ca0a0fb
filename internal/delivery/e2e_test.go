package delivery

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// system is a scheduler on a real store in a temp dir, on the real clock,
// delivering through an engine.
type system struct {
	t  *testing.T
	st *store.Store
	e  *Engine
	s  *scheduler.Scheduler
}

// fastRetry retries quickly so tests run in milliseconds.
var fastRetry = &storepb.RetryPolicy{
	Backoff: storepb.BackoffKind_BACKOFF_KIND_FIXED, InitialIntervalMs: 20, MaxIntervalMs: 20, MaxAttempts: 3, Jitter: 0.01,
}

func newSystem(t *testing.T, clients ...*storepb.Client) *system {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := st.NewBatch()
	for _, c := range clients {
		b.PutClient(c)
	}
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Clients: st, DefaultRetry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{Store: st, Deliverer: e, Retry: e, Partitions: 2})
	if err == nil {
		err = s.Start(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("scheduler Stop: %v", err)
		}
		if err := e.Close(ctx); err != nil {
			t.Errorf("engine Close: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("store Close: %v", err)
		}
	})
	return &system{t: t, st: st, e: e, s: s}
}

func (sys *system) register(req scheduler.RegisterRequest) *storepb.Task {
	sys.t.Helper()
	if req.Client == "" {
		req.Client = "acme"
	}
	v, _, err := sys.s.Register(context.Background(), req)
	if err != nil {
		sys.t.Fatalf("Register: %v", err)
	}
	return v.Task
}

// deadLetters waits until the store holds n dead letters and returns them.
func (sys *system) deadLetters(n int) []*storepb.DeadLetter {
	sys.t.Helper()
	var dls []*storepb.DeadLetter
	eventually(sys.t, "dead letters", func() bool {
		var err error
		dls, _, err = sys.st.ListDeadLetters("", 0, 100)
		if err != nil {
			sys.t.Fatal(err)
		}
		return len(dls) >= n
	})
	if len(dls) != n {
		sys.t.Fatalf("%d dead letters, want %d", len(dls), n)
	}
	return dls
}

// idle waits until nothing is scheduled, delivering or retrying.
func (sys *system) idle() {
	sys.t.Helper()
	eventually(sys.t, "the scheduler to go idle", func() bool {
		st := sys.s.Stats()
		return st.Wheel == 0 && st.Delivering == 0
	})
}

// recording is a handler that records deliveries in arrival order.
type recording struct {
	mu   sync.Mutex
	got  []*boomerangv1.Delivery
	fail func(d *boomerangv1.Delivery) error
	more chan struct{}
}

func newRecording() *recording { return &recording{more: make(chan struct{}, 1<<16)} }

func (r *recording) handle(_ context.Context, d *boomerangv1.Delivery) error {
	r.mu.Lock()
	r.got = append(r.got, d)
	fail := r.fail
	r.mu.Unlock()
	r.more <- struct{}{}
	if fail != nil {
		return fail(d)
	}
	return nil
}

// await waits for n deliveries in all and returns them.
func (r *recording) await(t *testing.T, n int) []*boomerangv1.Delivery {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]*boomerangv1.Delivery(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.more:
		case <-time.After(waitLimit):
			t.Fatalf("%d deliveries, want %d", len(got), n)
		}
	}
}

func TestEndToEndEveryProtocolInGroupOrder(t *testing.T) {
	rec := map[string]*recording{"http": newRecording(), "grpc": newRecording(), "tcp": newRecording(), "udp": newRecording()}
	hr, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: testSecret, Handler: rec["http"].handle})
	if err != nil {
		t.Fatal(err)
	}
	hsrv := httptest.NewServer(hr)
	defer hsrv.Close()
	// A UDP delivery is done once sent, so a group's next datagram follows
	// at once; one handler at a time keeps them in arrival order.
	udpAddr, _ := udpReceiverInFlight(t, rec["udp"].handle, 1)
	sys := newSystem(t,
		&storepb.Client{Id: "http", Callback: httpCallback(hsrv.URL), SigningSecret: testSecret},
		&storepb.Client{Id: "grpc", Callback: grpcCallback(grpcReceiver(t, rec["grpc"].handle))},
		&storepb.Client{Id: "tcp", Callback: tcpCallback(tcpReceiver(t, rec["tcp"].handle).Addr().String())},
		&storepb.Client{Id: "udp", Callback: udpCallback(udpAddr)},
	)
	const groups, perGroup = 5, 20
	for name := range rec {
		for i := range perGroup {
			for g := range groups {
				sys.register(scheduler.RegisterRequest{Client: name, Group: string(rune('a' + g)), Payload: []byte{byte(i)}})
			}
		}
	}
	for name, r := range rec {
		got := r.await(t, groups*perGroup)
		next := map[string]byte{}
		for _, d := range got {
			// A single node leads every shard in term 1 or later.
			if d.Client != name || d.Attempt != 1 || d.Term < 1 {
				t.Fatalf("%s: delivery %v", name, d)
			}
			if d.Payload[0] != next[d.Group] {
				t.Fatalf("%s: group %s got #%d, want #%d: not FIFO", name, d.Group, d.Payload[0], next[d.Group])
			}
			next[d.Group]++
		}
	}
	sys.idle()
	if st := sys.s.Stats(); st.Delivered != 4*groups*perGroup || st.Failed != 0 {
		t.Fatalf("scheduler stats %+v", st)
	}
}

func TestEndToEndHTTP5xxThenSuccess(t *testing.T) {
	rec := newRecording()
	rec.fail = func(d *boomerangv1.Delivery) error {
		if d.Attempt < 3 {
			return errors.New("try again")
		}
		return nil
	}
	hr, _ := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: testSecret, Handler: rec.handle})
	hsrv := httptest.NewServer(hr)
	defer hsrv.Close()
	sys := newSystem(t, &storepb.Client{Id: "acme", Callback: httpCallback(hsrv.URL), SigningSecret: testSecret})
	tk := sys.register(scheduler.RegisterRequest{Payload: []byte("x")})
	got := rec.await(t, 3)
	for i, d := range got {
		if d.TaskId != tk.Id || d.Attempt != uint32(i+1) || d.FireAtMs != tk.DueMs {
			t.Fatalf("delivery %d: %v", i, d)
		}
	}
	sys.idle()
	if st := sys.s.Stats(); st.Delivered != 1 || st.Failed != 2 || st.DeadLetters != 0 {
		t.Fatalf("scheduler stats %+v", st)
	}
}

func TestEndToEndFailuresDeadLetter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
	wrongSecret := newRecording()
	hr, _ := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: []byte("rotated"), Handler: wrongSecret.handle})
	hsrv := httptest.NewServer(hr)
	defer hsrv.Close()
	slow := stuckReceiver(t)
	sys := newSystem(t,
		&storepb.Client{Id: "refused", Callback: tcpCallback(refused)},
		&storepb.Client{Id: "signed", Callback: httpCallback(hsrv.URL), SigningSecret: testSecret},
		&storepb.Client{Id: "slow", Callback: &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_TCP, Endpoint: slow.Addr().String(), TimeoutMs: 50}},
	)
	sys.register(scheduler.RegisterRequest{Client: "refused", Payload: []byte("r")})
	sys.register(scheduler.RegisterRequest{Client: "signed", Payload: []byte("s")})
	sys.register(scheduler.RegisterRequest{Client: "slow", Payload: []byte("t")})
	dls := sys.deadLetters(3)
	byClient := map[string]*storepb.DeadLetter{}
	for _, dl := range dls {
		byClient[dl.Task.Client] = dl
	}
	for _, tc := range []struct {
		client   string
		attempts uint32
		text     string
	}{
		{"refused", 3, "refused"}, // retried until out of attempts
		{"signed", 1, "HTTP 401"}, // a wrong signature is final at once
		{"slow", 3, "timed out"},  // every attempt timed out
	} {
		dl := byClient[tc.client]
		if dl == nil || dl.Attempts != tc.attempts || !strings.Contains(dl.LastError, tc.text) {
			t.Errorf("%s: dead letter %v, want %d attempts and %q", tc.client, dl, tc.attempts, tc.text)
		}
	}
	if n := len(wrongSecret.got); n != 0 {
		t.Errorf("the handler ran %d times for deliveries it could not verify", n)
	}
}

func TestEndToEndBlockOnErrorHaltsTheGroup(t *testing.T) {
	rec := newRecording()
	rec.fail = func(d *boomerangv1.Delivery) error {
		if string(d.Payload) == "poison" {
			return errors.New("cannot process")
		}
		return nil
	}
	ln := tcpReceiver(t, rec.handle)
	sys := newSystem(t, &storepb.Client{Id: "acme", Callback: tcpCallback(ln.Addr().String())})
	block := storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
	sys.register(scheduler.RegisterRequest{Group: "g", Mode: block, Payload: []byte("poison")})
	sys.register(scheduler.RegisterRequest{Group: "g", Mode: block, Payload: []byte("after")})
	sys.register(scheduler.RegisterRequest{Group: "other", Mode: block, Payload: []byte("other")})
	sys.deadLetters(1)
	sys.idle()
	for _, d := range rec.await(t, 4) {
		if string(d.Payload) == "after" {
			t.Fatal("the blocked group's next task was delivered")
		}
	}
	g, err := sys.s.Group(context.Background(), scheduler.Caller{Client: "acme"}, "acme", "g")
	if err != nil || g.BlockedTask == 0 {
		t.Fatalf("group %v (%v), want blocked", g, err)
	}
	// Skip leaves the poison in the dead letter queue and goes on.
	if err := sys.s.Skip(context.Background(), scheduler.Caller{Client: "acme"}, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	got := rec.await(t, 5)
	if string(got[4].Payload) != "after" {
		t.Fatalf("after Skip delivered %q, want after", got[4].Payload)
	}
}

func TestEndToEndTCPReceiverRestarts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var first sync.Once
	dying := make(chan struct{})
	// The first receiver dies while it holds the first delivery.
	r1, _ := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: func(ctx context.Context, _ *boomerangv1.Delivery) error {
		first.Do(func() { close(dying) })
		<-ctx.Done()
		return ctx.Err()
	}})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = r1.Serve(ln)
	}()
	rec := newRecording()
	sys := newSystem(t, &storepb.Client{Id: "acme", Callback: tcpCallback(addr),
		Retry: &storepb.RetryPolicy{MaxAttempts: 10}})
	tk := sys.register(scheduler.RegisterRequest{Payload: []byte("x")})
	<-dying
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // close at once: the connection goes away mid-delivery
	_ = r1.Close(ctx)
	<-served
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port was taken meanwhile: %v", err)
	}
	serveTCPReceiver(t, ln2, rec.handle)
	got := rec.await(t, 1)
	if got[0].TaskId != tk.Id || got[0].Attempt < 2 {
		t.Fatalf("redelivery %v, want task %d on a later attempt", got[0], tk.Id)
	}
	sys.idle()
}

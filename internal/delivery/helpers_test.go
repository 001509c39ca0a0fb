package delivery

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// waitLimit bounds every wait in these tests; reaching it is a failure.
const waitLimit = 20 * time.Second

var testSecret = []byte("test secret")

// testTerm is the leader's term every test attempt carries: more than 32
// bits, so a transport that truncates it shows.
const testTerm = 1<<40 + 7

// clientMap is a ClientSource held in memory.
type clientMap struct {
	mu      sync.Mutex
	clients map[string]*storepb.Client
	reads   int
}

func newClientMap(clients ...*storepb.Client) *clientMap {
	m := &clientMap{clients: map[string]*storepb.Client{}}
	for _, c := range clients {
		m.clients[c.Id] = c
	}
	return m
}

func (m *clientMap) Client(id string) (*storepb.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	c, ok := m.clients[id]
	if !ok {
		return nil, fmt.Errorf("client %q: %w", id, store.ErrNotFound)
	}
	return c, nil
}

func (m *clientMap) put(c *storepb.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clients[c.Id] = c
}

// newEngine builds an engine for a client "acme" whose callback is cb, and
// closes it when the test ends.
func newEngine(t *testing.T, cb *storepb.Callback, tune func(*Config)) (*Engine, *clientMap) {
	t.Helper()
	clients := newClientMap(&storepb.Client{Id: "acme", Callback: cb, SigningSecret: testSecret})
	cfg := Config{Clients: clients}
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e, clients
}

var nextTaskID uint64 = 1000

func task(payload string) *storepb.Task {
	nextTaskID++
	return &storepb.Task{
		Id: nextTaskID, Client: "acme", Payload: []byte(payload),
		DueMs: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
	}
}

// outcome is a pending attempt's result.
type outcome chan error

// deliver starts an attempt of t in term testTerm and returns its
// outcome channel.
func deliver(e *Engine, t *storepb.Task, attempt int) outcome {
	return deliverInTerm(e, t, attempt, testTerm)
}

// deliverInTerm is deliver by a leader of the given term.
func deliverInTerm(e *Engine, t *storepb.Task, attempt int, term uint64) outcome {
	ch := make(outcome, 1)
	e.Deliver(scheduler.Delivery{Task: t, Attempt: attempt, Term: term}, func(err error) { ch <- err })
	return ch
}

// wait returns the attempt's result, failing the test if none comes.
func (o outcome) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-o:
		return err
	case <-time.After(waitLimit):
		t.Fatal("no outcome")
		return nil
	}
}

// pending fails the test if the attempt has ended.
func (o outcome) pending(t *testing.T) {
	t.Helper()
	select {
	case err := <-o:
		t.Fatalf("attempt ended early: %v", err)
	default:
	}
}

// eventually polls cond until it holds, failing the test at waitLimit.
func eventually(t testing.TB, what string, cond func() bool) {
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

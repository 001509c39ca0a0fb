package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// Thousands of requests in flight on one connection: every one is
// answered, with its own answer.
func TestPipelining(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	admin := s.admin(t)
	registerClient(t, admin, "piper", "http://127.0.0.1:1/unused", 0)
	c := s.dial(t, "piper", "piper-password", client.WithMaxInFlight(5000))
	ctx := testContext(t)
	const n = 5000
	var wg sync.WaitGroup
	ids := make([]uint64, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("task %d", i)
			task, err := c.Schedule(ctx, []byte(want), client.After(time.Hour), client.InGroup(fmt.Sprintf("g%d", i%50)))
			switch {
			case err != nil:
				errs <- err
			case string(task.GetPayload()) != want:
				errs <- fmt.Errorf("request %d got the answer for %q", i, task.GetPayload())
			default:
				ids[i] = task.GetId()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	listed := 0
	for task, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{PageSize: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		if !seen[task.GetId()] {
			t.Fatalf("listed task %d was never acknowledged", task.GetId())
		}
		listed++
	}
	if len(seen) != n || listed != n {
		t.Fatalf("%d distinct ids, %d listed; want %d", len(seen), listed, n)
	}
}

// SIGKILL under load: every registration the server acknowledged before
// it died is there after a restart on the same data directory. Several
// rounds, each killing at a random point.
func TestCrashKeepsAcknowledged(t *testing.T) {
	t.Parallel()
	dataDir := newDataDir(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	acked := map[uint64]string{} // id → payload, over all rounds
	for round := range 3 {
		s := startServer(t, dataDir)
		if round == 0 {
			registerClient(t, s.admin(t), "crash", "http://127.0.0.1:1/unused", 0)
		}
		checkAcked(t, s, acked, round)
		killAt := 2000 + rng.IntN(6000)
		got := loadUntilKilled(t, s, round, killAt)
		for id, p := range got {
			acked[id] = p
		}
		t.Logf("round %d: killed after %d acknowledgements (target %d)", round, len(got), killAt)
	}
	s := startServer(t, dataDir)
	checkAcked(t, s, acked, 3)
}

// loadUntilKilled registers as fast as the server answers on several
// connections, and SIGKILLs the server once killAt registrations were
// acknowledged. It returns every acknowledged id.
func loadUntilKilled(t *testing.T, s *server, round, killAt int) map[uint64]string {
	t.Helper()
	const conns, depth = 4, 128
	var (
		mu       sync.Mutex
		acked    = map[uint64]string{}
		count    atomic.Int64
		killOnce sync.Once
		wg       sync.WaitGroup
		seq      atomic.Int64
	)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// Dial every connection before the load starts: the server may be
	// killed before a late dial would finish.
	clients := make([]*client.Client, conns)
	for i := range clients {
		clients[i] = s.dial(t, "crash", "crash-password", client.WithReconnectBackoff(time.Second, time.Second))
	}
	for _, c := range clients {
		for range depth {
			wg.Go(func() {
				for {
					payload := fmt.Sprintf("r%d-%d", round, seq.Add(1))
					task, err := c.Schedule(ctx, []byte(payload), client.After(time.Hour), client.InGroup(payload[:4]))
					if err != nil {
						if !errors.Is(err, client.ErrConnectionLost) && ctx.Err() == nil && !errors.Is(err, client.ErrClosed) {
							t.Errorf("registration failed other than by the crash: %v", err)
						}
						return
					}
					mu.Lock()
					acked[task.GetId()] = payload
					mu.Unlock()
					if count.Add(1) >= int64(killAt) {
						killOnce.Do(s.kill)
					}
				}
			})
		}
	}
	// The workers end when the connection dies with the server.
	go func() {
		<-s.exited
		// Calls not yet written wait for a reconnection; end them.
		cancel()
	}()
	wg.Wait()
	return acked
}

// checkAcked verifies that every acknowledged id is there with its
// payload.
func checkAcked(t *testing.T, s *server, acked map[uint64]string, round int) {
	t.Helper()
	c := s.dial(t, "crash", "crash-password")
	ctx := testContext(t)
	found := map[uint64]bool{}
	for task, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{PageSize: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := acked[task.GetId()]; ok && string(task.GetPayload()) != p {
			t.Fatalf("after crash %d: task %d has payload %q, want %q", round, task.GetId(), task.GetPayload(), p)
		}
		found[task.GetId()] = true
	}
	missing := 0
	for id := range acked {
		if !found[id] {
			missing++
			if missing <= 5 {
				t.Errorf("after crash %d: acknowledged task %d is gone", round, id)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("after crash %d: %d of %d acknowledged tasks are gone", round, missing, len(acked))
	}
	// Spot-check GetTask too.
	n := 0
	for id := range acked {
		if _, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); err != nil {
			t.Fatalf("after crash %d: GetTask(%d): %v", round, id, err)
		}
		if n++; n == 200 {
			break
		}
	}
}

// A Client outlives a server restart on the same address: calls made
// while the server is down wait for it, and its session, replicated
// state like its client, is still valid after the restart.
func TestReconnectAcrossRestart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dataDir := newDataDir(t)
	s := startServer(t, dataDir, "--tcp-addr", addr)
	registerClient(t, s.admin(t), "phoenix", "http://127.0.0.1:1/unused", 0)
	c := s.dial(t, "phoenix", "phoenix-password", client.WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond))
	ctx := testContext(t)
	before, err := c.Schedule(ctx, []byte("before"), client.After(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	oldSession := c.Session().ID
	s.kill()
	if again := startServer(t, dataDir, "--tcp-addr", addr); again.tcp != addr {
		t.Fatalf("restarted on %s, want %s", again.tcp, addr)
	}
	after, err := c.Schedule(ctx, []byte("after"), client.After(time.Hour))
	if err != nil {
		t.Fatalf("Schedule after the restart: %v", err)
	}
	if c.Session().ID != oldSession {
		t.Fatal("the Client logged in again: the restarted server forgot its session")
	}
	for _, id := range []uint64{before.GetId(), after.GetId()} {
		if _, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id}); err != nil {
			t.Fatalf("GetTask(%d): %v", id, err)
		}
	}
}

package scheduler

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// The crash test runs a child process that registers, updates and cancels
// tasks as fast as it can, logging every acknowledgement and every
// delivery attempt to its stdout, and kills it with SIGKILL at a random
// point, round after round on the same store. Then it starts a scheduler
// on that store, lets every task come due, and checks the whole history:
//   - every acknowledged registration was delivered at least once, unless
//     it was being cancelled (a cancel may be durable even though the kill
//     came before its acknowledgement);
//   - nothing was delivered after its cancellation was acknowledged;
//   - within a group, once a task was delivered no earlier task of the
//     group is delivered again, in any round: a group's next task starts
//     only once its predecessor's outcome is durable;
//   - a one-shot task acknowledged by the receiver is delivered again only
//     after a crash (it was in flight when the process died), never twice
//     within one run;
//   - a BLOCK_ON_ERROR group whose head always fails stays blocked: once
//     that head is registered, no later task of its group is delivered, in
//     any round or after.
//
// Log lines: "R id group interval" (registered; group "-" for none), "X id"
// (about to cancel), "C id" (cancelled), "D id attempt" (attempt started),
// "D id attempt interval" (attempt started), "A id" (attempt acknowledged by the receiver), "P id" (the poison head of
// the blocked group), and "ROUND" between runs.

const crashChildEnv = "BOOMERANG_SCHEDULER_CRASH_DIR"

func TestCrashRecoveryKeepsEveryAcknowledgement(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var log []string
	const rounds = 24
	for round := range rounds {
		lines := runChildUntilKilled(t, dir, 50+rng.IntN(600))
		if len(lines) == 0 {
			t.Fatalf("round %d: child logged nothing", round)
		}
		log = append(append(log, lines...), "ROUND")
	}
	log = append(log, drainAfterCrashes(t, store.Options{}, dir, log)...)
	checkCrashHistory(t, log)
}

// runChildUntilKilled starts a child on dir, kills it after it has logged
// acks acknowledgements, and returns everything it logged.
func runChildUntilKilled(t *testing.T, dir string, acks int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	seen := 0
	killed := false
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(waitLimit, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if line[0] == 'R' || line[0] == 'C' {
			seen++
		}
		if seen >= acks && !killed {
			killed = true
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acknowledgements before being killed", seen)
	}
	return lines
}

// childMain runs the crash test's child workload when the environment asks
// for it; it never returns then, it is killed.
func childMain() bool {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		return false
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: store:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	emit := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	var attempts atomic.Uint32
	s, err := New(Config{
		Store:      st,
		Partitions: 2,
		Retry:      FixedRetry{Attempts: 4, Delay: 15 * time.Millisecond},
		Deliverer: DelivererFunc(func(d Delivery, done func(error)) {
			emit("D %d %d %d", d.Task.Id, d.Attempt, d.Task.IntervalMs)
			if string(d.Task.Payload) == poison || attempts.Add(1)%5 == 0 {
				done(errRefused)
				return
			}
			emit("A %d", d.Task.Id)
			done(nil)
		}),
	})
	if err == nil {
		err = s.Start(context.Background())
	}
	if err == nil {
		err = registerPoison(s, emit)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: scheduler:", err)
		os.Exit(2)
	}
	for w := range 8 {
		go crashWorker(s, w, nil, emit)
	}
	select {}
}

const poison = "poison"

// registerPoison gives the blocked group its head once: a task that always
// fails, with one attempt, in BLOCK_ON_ERROR mode. Its idempotency key
// keeps later rounds from adding another.
func registerPoison(s *Scheduler, emit func(string, ...any)) error {
	v, created, err := s.Register(context.Background(), RegisterRequest{
		Client: "crash", Group: "blk", Payload: []byte(poison), IdempotencyKey: poison,
		Mode:  storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR,
		Retry: &storepb.RetryPolicy{MaxAttempts: 1},
	})
	if err == nil && created {
		emit("P %d", v.Task.Id)
	}
	return err
}

// crashWorker registers, updates and cancels tasks until stop closes (nil:
// forever), logging what was acknowledged.
func crashWorker(s *Scheduler, w int, stop <-chan struct{}, emit func(string, ...any)) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
	c := Caller{Client: "crash"}
	var mine []uint64
	for {
		select {
		case <-stop:
			return
		default:
		}
		ctx := context.Background()
		switch op := rng.IntN(10); {
		case op < 7 || len(mine) == 0:
			// Grouped tasks all wait the same 10 ms, so within a group due
			// order is acceptance order.
			req := RegisterRequest{Client: "crash", Payload: []byte("p"), Delay: 10 * time.Millisecond}
			// Recurring tasks are rare: they never end, and every round
			// adds some.
			switch g := rng.IntN(50); {
			case g < 32:
				req.Group = "g" + strconv.Itoa(g%8)
			case g == 32:
				req.Interval = 300 * time.Millisecond
			case g == 33:
				req.Group = "blk"
				req.Mode = storepb.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR
			}
			v, _, err := s.Register(ctx, req)
			if err == nil {
				emit("R %d %s %d", v.Task.Id, cmp.Or(req.Group, "-"), req.Interval.Milliseconds())
				mine = append(mine, v.Task.Id)
			}
		case op < 8:
			id := mine[rng.IntN(len(mine))]
			_, _ = s.Update(ctx, c, UpdateRequest{ID: id, Payload: []byte("updated")})
		default:
			i := rng.IntN(len(mine))
			id := mine[i]
			mine = append(mine[:i], mine[i+1:]...)
			emit("X %d", id)
			if err := s.Cancel(ctx, c, id); err == nil {
				emit("C %d", id)
			}
		}
	}
}

// drainAfterCrashes starts a scheduler on the crashed store, cancels the
// recurring tasks once they have fired, and waits until every task that
// must still fire has.
func drainAfterCrashes(t *testing.T, opts store.Options, dir string, log []string) []string {
	t.Helper()
	// A delivery can be logged before the registration's acknowledgement,
	// so collect first, then subtract.
	need, done := map[uint64]bool{}, map[uint64]bool{}
	for _, line := range log {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "P" {
			continue
		}
		id, _ := strconv.ParseUint(f[1], 10, 64)
		switch {
		case f[0] == "R" && f[2] != "blk": // the blocked group's tasks never run
			need[id] = true
		case f[0] != "R":
			done[id] = true
		}
	}
	for id := range done {
		delete(need, id)
	}
	st, err := store.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	var lines []string
	arrived := make(chan struct{}, 1)
	s, err := New(Config{Store: st, Partitions: 2, Retry: FixedRetry{Attempts: 4}, Deliverer: DelivererFunc(func(d Delivery, done func(error)) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf("D %d %d %d", d.Task.Id, d.Attempt, d.Task.IntervalMs))
		delete(need, d.Task.Id)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
		if string(d.Task.Payload) == poison {
			done(errRefused)
			return
		}
		done(nil)
	})})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(waitLimit)
	for {
		mu.Lock()
		left := len(need)
		mu.Unlock()
		if left == 0 {
			break
		}
		select {
		case <-arrived:
		case <-deadline:
			mu.Lock()
			var sample []string
			for id := range need {
				if len(sample) == 5 {
					break
				}
				task, err := st.Task(id)
				sample = append(sample, fmt.Sprintf("%d (shard %d): %v %v", id, store.ShardOf(id), task, err))
			}
			mu.Unlock()
			t.Fatalf("%d acknowledged tasks never delivered after the crashes, e.g.\n%s", left, strings.Join(sample, "\n"))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return lines
}

func checkCrashHistory(t *testing.T, log []string) {
	t.Helper()
	group := map[uint64]string{}
	recurring := map[uint64]bool{}
	acked := map[uint64]bool{}
	cancelling := map[uint64]bool{}
	cancelled := map[uint64]bool{}
	delivered := map[uint64]bool{}
	ackedThisRound := map[uint64]bool{}
	latest := map[string]uint64{}
	var poisonID uint64
	registered := 0
	for i, line := range log {
		f := strings.Fields(line)
		if f[0] == "ROUND" {
			clear(ackedThisRound)
			continue
		}
		id, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		switch f[0] {
		case "P":
			poisonID = id
			group[id] = "blk"
		case "A":
			ackedThisRound[id] = true
		case "R":
			registered++
			acked[id] = true
			if f[2] != "-" {
				group[id] = f[2]
			}
			recurring[id] = f[3] != "0"
		case "X":
			cancelling[id] = true
		case "C":
			cancelled[id] = true
		case "D":
			recurring[id] = recurring[id] || f[3] != "0" // the R line may be lost to the kill
			if cancelled[id] {
				t.Fatalf("line %d: task %d delivered after its cancellation was acknowledged", i, id)
			}
			if ackedThisRound[id] && !recurring[id] {
				t.Fatalf("line %d: task %d delivered again after its receiver acknowledged it, with no crash between", i, id)
			}
			if group[id] == "blk" && poisonID != 0 && id > poisonID {
				t.Fatalf("line %d: task %d of the blocked group delivered after its failing head %d", i, id, poisonID)
			}
			if g, ok := group[id]; ok {
				if prev := latest[g]; id < prev {
					t.Fatalf("line %d: group %s delivered task %d after a later task, %d; their history:\n%s",
						i, g, id, prev, linesAbout(log[:i+1], id, prev))
				}
				latest[g] = id
			}
			delivered[id] = true
		}
	}
	blocked := 0
	for id, g := range group {
		if g == "blk" && id > poisonID {
			blocked++
		}
	}
	if poisonID == 0 || !delivered[poisonID] || blocked == 0 {
		t.Fatalf("the blocked group saw no traffic: head %d attempted %v, %d tasks behind it", poisonID, delivered[poisonID], blocked)
	}
	for id := range acked {
		if !delivered[id] && !cancelling[id] && group[id] != "blk" {
			t.Fatalf("task %d was acknowledged but never delivered", id)
		}
	}
	if registered < 1000 || len(cancelled) == 0 {
		t.Fatalf("history too small to mean much: %d registrations, %d cancellations", registered, len(cancelled))
	}
	t.Logf("history: %d lines, %d registrations, %d cancellations, %d tasks delivered", len(log), registered, len(cancelled), len(delivered))
}

// linesAbout returns the lines of log about the given tasks, and the
// rounds between them.
func linesAbout(log []string, ids ...uint64) string {
	var out []string
	for _, line := range log {
		f := strings.Fields(line)
		if f[0] == "ROUND" {
			out = append(out, line)
			continue
		}
		if id, err := strconv.ParseUint(f[1], 10, 64); err == nil && slices.Contains(ids, id) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

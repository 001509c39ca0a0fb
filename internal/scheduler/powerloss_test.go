package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
)

// The power-loss test runs the crash test's workload in this process on
// an in-memory filesystem, and at a random point cuts the power: the
// filesystem keeps only what was synced, and nothing the process did
// after that instant counts. Round after round, then a drain, then the
// same history checks as the crash test, plus one: a dead letter id an
// operator saw in a listing never names another dead letter later.
//
// Log lines are the crash test's, and "L id task due" for a dead letter an
// operator listed.
func TestPowerLossKeepsEveryAcknowledgement(t *testing.T) {
	fs := store.NewMemFS()
	fs.SyncDelay(time.Millisecond)
	const dir = "/var/lib/boomerang"
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	var log []string
	const rounds = 16
	for round := range rounds {
		var lines []string
		lines, fs = runUntilPowerLoss(t, fs, dir, 50+rng.IntN(600))
		if len(lines) == 0 {
			t.Fatalf("round %d: nothing logged", round)
		}
		log = append(append(log, lines...), "ROUND")
	}
	log = append(log, drainAfterCrashes(t, store.Options{FS: fs}, dir, log)...)
	checkCrashHistory(t, log)
	checkDeadLetterIDs(t, log)
}

// powerLog is a round's history until the power goes: nothing is logged
// after cut.
type powerLog struct {
	mu     sync.Mutex
	lines  []string
	acks   int
	cut    bool
	enough chan struct{}
	want   int
}

func (l *powerLog) emit(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return
	}
	line := fmt.Sprintf(format, args...)
	l.lines = append(l.lines, line)
	if line[0] == 'R' || line[0] == 'C' {
		if l.acks++; l.acks == l.want {
			close(l.enough)
		}
	}
}

// powerOff ends the history and returns it with what fs holds at this
// instant after a power loss: from now on the process does not exist.
func (l *powerLog) powerOff(fs *store.MemFS) ([]string, *store.MemFS) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
	after := fs.Crash()
	after.SyncDelay(time.Millisecond)
	return l.lines, after
}

// runUntilPowerLoss runs the workload on fs until acks acknowledgements
// are logged, then cuts the power and returns the history until then and
// the filesystem as the power loss left it.
func runUntilPowerLoss(t *testing.T, fs *store.MemFS, dir string, acks int) ([]string, *store.MemFS) {
	t.Helper()
	l := &powerLog{enough: make(chan struct{}), want: acks}
	st, err := store.Open(dir, store.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		Store:      st,
		Partitions: 2,
		Retry:      FixedRetry{Attempts: 2, Delay: 15 * time.Millisecond},
		Deliverer:  crashDeliverer(l.emit),
	})
	if err == nil {
		err = s.Start(context.Background())
	}
	if err == nil {
		err = registerPoison(s, l.emit)
	}
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for w := range 8 {
		workers.Go(func() { crashWorker(s, w, stop, l.emit) })
	}
	workers.Go(func() { listDeadLetters(s, stop, l.emit) })
	select {
	case <-l.enough:
	case <-time.After(waitLimit):
		t.Fatalf("only %d acknowledgements before the time limit", l.acks)
	}
	lines, after := l.powerOff(fs)
	close(stop)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Stop(ctx)
	workers.Wait()
	_ = st.Close()
	return lines, after
}

// listDeadLetters plays an operator who keeps listing dead letters.
func listDeadLetters(s *Scheduler, stop <-chan struct{}, emit func(string, ...any)) {
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		dls, _, err := s.DeadLetters(context.Background(), Caller{Admin: true}, "", 0, 1000)
		if err != nil {
			continue
		}
		for _, d := range dls {
			emit("L %d %d %d", d.Id, d.Task.Id, d.Task.DueMs)
		}
	}
}

// checkDeadLetterIDs checks that every dead letter id listed names the
// same occurrence every time.
func checkDeadLetterIDs(t *testing.T, log []string) {
	t.Helper()
	named := map[string]string{}
	for i, line := range log {
		f := strings.Fields(line)
		if f[0] != "L" {
			continue
		}
		what := f[2] + "@" + f[3]
		if prev, ok := named[f[1]]; ok && prev != what {
			t.Fatalf("line %d: dead letter %s named task@due %s, earlier %s", i, f[1], what, prev)
		}
		named[f[1]] = what
	}
	if len(named) == 0 {
		t.Fatal("no dead letter was ever listed")
	}
	t.Logf("%d dead letter ids listed", len(named))
}

// crashDeliverer logs every attempt, fails one in five and the poison
// head always, and acknowledges the rest.
func crashDeliverer(emit func(string, ...any)) Deliverer {
	var mu sync.Mutex
	n := 0
	return DelivererFunc(func(d Delivery, done func(error)) {
		emit("D %d %d %d", d.Task.Id, d.Attempt, d.Task.IntervalMs)
		mu.Lock()
		n++
		fail := n%5 == 0
		mu.Unlock()
		if string(d.Task.Payload) == poison || fail {
			done(errRefused)
			return
		}
		emit("A %d", d.Task.Id)
		done(nil)
	})
}

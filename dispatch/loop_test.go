package dispatch

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// steppedPartition builds a partition with no goroutines: the test calls
// step and plays the only worker by taking tasks from the handoff, so the
// loop's scheduling decisions can be checked exactly.
func steppedPartition(t *testing.T, cfg Config[int]) *partition[int] {
	t.Helper()
	cfg.Handler = func(Task[int]) Result { return Success }
	cfg.Partitions = 1
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	return newPartition(0, &cfg)
}

func (p *partition[T]) push(t *testing.T, k Key, v T) {
	t.Helper()
	if err := p.ring.push(entry[T]{key: k, value: v, slot: -1}); err != nil {
		t.Fatal(err)
	}
}

// runStepped steps the partition, completing each handed-off task at once,
// and returns the order tasks were started in as "key:value".
func runStepped(p *partition[int], limit int) []string {
	var order []string
	for range limit {
		p.step()
		select {
		case tk := <-p.work:
			h := tk.handle()
			order = append(order, fmt.Sprintf("%v:%d", h.Key(), h.Value()))
			tk.finish(h.gen, Success)
		default:
			return order
		}
	}
	return order
}

// A family keeps the worker for Slice tasks, then goes behind the families
// that were waiting.
func TestSliceBoundsATurn(t *testing.T) {
	p := steppedPartition(t, Config[int]{Slice: 3, Handoff: 1})
	for i := range 10 {
		p.push(t, StringKey("H"), i)
	}
	for i := range 6 {
		p.push(t, StringKey("A"), i)
		p.push(t, StringKey("B"), i)
	}
	got := strings.Join(runStepped(p, 100), " ")
	want := `"H":0 "H":1 "H":2 "A":0 "A":1 "A":2 "B":0 "B":1 "B":2 ` +
		`"H":3 "H":4 "H":5 "A":3 "A":4 "A":5 "B":3 "B":4 "B":5 ` +
		`"H":6 "H":7 "H":8 "H":9`
	if got != want {
		t.Fatalf("start order\n got %s\nwant %s", got, want)
	}
	if n := p.activeFamilies(); n != 0 {
		t.Fatalf("%d families left after all ran", n)
	}
}

// Ungated tasks take their place in the ready queue in arrival order,
// between families, and never wait for a family.
func TestUngatedTasksShareTheReadyQueue(t *testing.T) {
	p := steppedPartition(t, Config[int]{Slice: 2, Handoff: 1})
	p.push(t, IntKey(1), 0)
	p.push(t, IntKey(-1), 100)
	p.push(t, IntKey(1), 1)
	p.push(t, IntKey(0), 101)
	p.push(t, IntKey(1), 2)
	got := strings.Join(runStepped(p, 100), " ")
	want := "1:0 1:1 -1:100 0:101 1:2"
	if got != want {
		t.Fatalf("start order\n got %s\nwant %s", got, want)
	}
}

// The loop's sleep is the one place a lost wakeup could hide: work that
// arrives after the loop last looked but before it announces sleep. Here
// every submission and every asynchronous completion of a chain of tasks
// is made exactly in that window, from a hook on the loop goroutine. If
// the loop slept without looking again, the chain would stall.
func TestNoLostWakeupInSleepWindow(t *testing.T) {
	t.Parallel()
	const total = 3000
	held := make(chan Task[int], 1) // async tasks, completed in the window
	ran := make(chan int, 1)        // sync tasks, followed up in the window
	finished := make(chan struct{})
	var e *Engine[int]
	started := make(chan struct{}) // closed once e is set
	next, consumed := 1, uint64(0)
	waitOne := func() (Task[int], int, bool) {
		select {
		case tk := <-held:
			return tk, tk.Value(), true
		case v := <-ran:
			return Task[int]{}, v, true
		case <-time.After(waitLimit):
			t.Errorf("no task ran for %v; chain at %d", waitLimit, next)
			return Task[int]{}, 0, false
		}
	}
	cfg := Config[int]{
		Partitions: 1,
		Workers:    1,
		Handler: func(tk Task[int]) Result {
			if tk.Value()%2 == 0 {
				held <- tk
				return Later
			}
			ran <- tk.Value()
			return Success
		},
		beforeSleep: func(int) {
			// Wait only for a task the loop has already handed out: the
			// hook runs on the loop goroutine and may read its counters.
			select {
			case <-started:
			default:
				return
			}
			if next > total || e.parts[0].cnt.dispatched == consumed {
				return
			}
			consumed++
			tk, v, ok := waitOne()
			if !ok || v != next-1 {
				if ok {
					t.Errorf("chain ran %d, want %d", v, next-1)
				}
				next = total + 1
				close(finished)
				return
			}
			if next < total {
				if err := e.TrySubmit(IntKey(7), next); err != nil {
					t.Errorf("TrySubmit in the sleep window: %v", err)
				}
			} else {
				close(finished)
			}
			next++
			if tk.t != nil {
				tk.Complete(Success)
			}
		},
	}
	var err error
	e, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	close(started)
	submit(t, e, IntKey(7), NextOnError, 0)
	waitClosed(t, finished, "the chain of tasks driven from the sleep window")
	closeEngine(t, e)
	if got := Total(e.Stats()).Completed; got != total {
		t.Fatalf("completed %d, want %d", got, total)
	}
}

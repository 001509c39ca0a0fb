package dispatch

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Interleaved submissions A1,B1,C1,A2,B2,C2,... must complete in order per
// family, with nothing lost, whether handlers finish synchronously or later.
func TestInterleavedFamiliesKeepOrder(t *testing.T) {
	for _, async := range []bool{false, true} {
		name := map[bool]string{false: "sync", true: "async"}[async]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const families, perFamily = 8, 500
			var h history
			var x exclusive
			done := make(chan struct{})
			var count atomic.Int64
			finish := func(tk Task[int]) {
				h.add(event{key: tk.Key(), seq: tk.Seq(), item: tk.Value()})
				x.leave(tk.Key())
				if count.Add(1) == families*perFamily {
					close(done)
				}
			}
			e := start(t, Config[int]{
				Partitions: 2,
				Workers:    3,
				Handler: func(tk Task[int]) Result {
					x.enter(tk.Key())
					if async {
						go func() { finish(tk); tk.Complete(Success) }()
						return Later
					}
					finish(tk)
					return Success
				},
			})
			for i := range perFamily {
				for f := range families {
					submit(t, e, IntKey(int64(f+1)), NextOnError, i)
				}
			}
			waitClosed(t, done, "all tasks")
			if err := x.err(); err != nil {
				t.Fatal(err)
			}
			evs := h.snapshot()
			checkFIFO(t, evs)
			perKey := map[Key]int{}
			for _, ev := range evs {
				perKey[ev.key]++
			}
			for f := range families {
				if got := perKey[IntKey(int64(f+1))]; got != perFamily {
					t.Fatalf("family %d ran %d tasks, want %d", f+1, got, perFamily)
				}
			}
		})
	}
}

// A hot family with 10,000 queued tasks must not hold up families 1 and 2,
// submitted after it: they finish while the hot family is still running,
// and the hot family stays serialized. Nothing runs until every task is
// queued, so the families compete with their whole backlogs, and one
// worker runs them all, so the order is the engine's alone (with more, the
// Go scheduler may keep one family's chain of goroutines running).
func TestHotFamilyDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	const hot, hotTasks, coldTasks = 999, 10000, 1000
	var h history
	var x exclusive
	var count atomic.Int64
	done, queued := make(chan struct{}), make(chan struct{})
	e := start(t, Config[int]{
		Partitions: 1, // everyone shares one loop and one worker
		Workers:    1,
		MaxPending: -1,
		Handler: func(tk Task[int]) Result {
			<-queued
			x.enter(tk.Key())
			h.add(event{key: tk.Key(), item: tk.Value()})
			x.leave(tk.Key())
			if count.Add(1) == hotTasks+2*coldTasks {
				close(done)
			}
			return Success
		},
	})
	for i := range hotTasks {
		submit(t, e, IntKey(hot), NextOnError, i)
	}
	for i := range coldTasks {
		submit(t, e, IntKey(1), NextOnError, i)
		submit(t, e, IntKey(2), NextOnError, i)
	}
	close(queued)
	waitClosed(t, done, "all tasks")
	if err := x.err(); err != nil {
		t.Fatal(err)
	}
	evs := h.snapshot()
	checkFIFO(t, evs)
	lastIndex := map[Key]int{}
	for i, ev := range evs {
		lastIndex[ev.key] = i
	}
	for _, k := range []Key{IntKey(1), IntKey(2)} {
		if lastIndex[k] >= lastIndex[IntKey(hot)] {
			t.Fatalf("family %v finished at event %d, after the hot family (%d)", k, lastIndex[k], lastIndex[IntKey(hot)])
		}
	}
}

// Race hammer: each new task of a family arrives exactly while the
// previous one is completing, over many rounds and families, with both
// synchronous and asynchronous completion. Nothing may stall, reorder or
// be lost.
func TestRaceHammerArrivalDuringCompletion(t *testing.T) {
	t.Parallel()
	const families, rounds = 8, 3000
	var x exclusive
	var h history
	running := make([]chan int, families+1)
	for i := range running {
		running[i] = make(chan int, 1)
	}
	e := start(t, Config[int]{
		Partitions: 2,
		Workers:    2,
		Handler: func(tk Task[int]) Result {
			f := tk.Key()
			x.enter(f)
			h.add(event{key: f, item: tk.Value()})
			x.leave(f)
			running[f.id] <- tk.Value() // the producer submits the next task now
			if tk.Value()%2 == 1 {
				go tk.Complete(Success)
				return Later
			}
			return Success
		},
	})
	var wg sync.WaitGroup
	for f := 1; f <= families; f++ {
		wg.Go(func() {
			key := IntKey(int64(f))
			submit(t, e, key, NextOnError, 0)
			for i := 1; i < rounds; i++ {
				select {
				case got := <-running[f]:
					if got != i-1 {
						t.Errorf("family %d: handler ran %d, want %d", f, got, i-1)
						return
					}
				case <-time.After(waitLimit):
					t.Errorf("family %d stalled at round %d", f, i)
					return
				}
				submit(t, e, key, NextOnError, i)
			}
			<-running[f]
		})
	}
	wg.Wait()
	if err := x.err(); err != nil {
		t.Fatal(err)
	}
	evs := h.snapshot()
	checkFIFO(t, evs)
	if len(evs) != families*rounds {
		t.Fatalf("ran %d tasks, want %d", len(evs), families*rounds)
	}
}

// Uncorrelated tasks are spread over every partition and run in parallel:
// all Partitions*Workers of them must be inside the handler at once.
func TestUncorrelatedBurstUsesEveryPartition(t *testing.T) {
	t.Parallel()
	const parts, workers = 4, 2
	const total = parts * workers
	var entered sync.WaitGroup
	entered.Add(total)
	allIn := make(chan struct{})
	go func() { entered.Wait(); close(allIn) }()
	var mu sync.Mutex
	seen := map[int]int{}
	e := start(t, Config[int]{
		Partitions: parts,
		Workers:    workers,
		Handler: func(tk Task[int]) Result {
			mu.Lock()
			seen[tk.Partition()]++
			mu.Unlock()
			if tk.Seq() != 0 {
				t.Errorf("uncorrelated task has seq %d", tk.Seq())
			}
			entered.Done()
			<-allIn // would deadlock if uncorrelated tasks were serialized
			return Success
		},
	})
	for i := range total {
		key := IntKey(-1)
		if i%2 == 1 {
			key = StringKey("")
		}
		submit(t, e, key, NextOnError, i)
	}
	waitClosed(t, allIn, "every uncorrelated task to run at once")
	for p := range parts {
		if seen[p] != workers {
			t.Fatalf("partition %d ran %d tasks, want %d (spread %v)", p, seen[p], workers, seen)
		}
	}
}

// Immediate tasks of one family are not serialized either.
func TestImmediateSkipsGating(t *testing.T) {
	t.Parallel()
	const total = 4
	var entered sync.WaitGroup
	entered.Add(total)
	allIn := make(chan struct{})
	go func() { entered.Wait(); close(allIn) }()
	e := start(t, Config[int]{
		Partitions: 1,
		Workers:    total,
		Handler: func(tk Task[int]) Result {
			entered.Done()
			<-allIn
			return Success
		},
	})
	for i := range total {
		submit(t, e, StringKey("acct"), Immediate, i)
	}
	waitClosed(t, allIn, "immediate tasks of one key to run at once")
}

// A tiny ring and a held worker make TrySubmit refuse with ErrBusy; every
// accepted task still runs once the worker is released.
func TestTinyRingRejectsBusyAndLosesNothing(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var ran atomic.Int64
	e := start(t, Config[int]{
		Partitions: 1,
		RingSize:   2,
		Workers:    1,
		Handoff:    1,
		MaxQueued:  2,
		Handler: func(tk Task[int]) Result {
			<-gate
			ran.Add(1)
			return Success
		},
	})
	accepted, busy := 0, 0
	for i := range 100 {
		switch err := e.TrySubmit(IntKey(int64(i%3+1)), i); {
		case err == nil:
			accepted++
		case errors.Is(err, ErrBusy):
			busy++
		default:
			t.Fatalf("TrySubmit: %v", err)
		}
	}
	if busy == 0 {
		t.Fatalf("no ErrBusy with a full ring (accepted %d)", accepted)
	}
	if got := Total(e.Stats()).RejectedBusy; got != uint64(busy) {
		t.Fatalf("RejectedBusy = %d, want %d", got, busy)
	}
	close(gate)
	closeEngine(t, e)
	if got := ran.Load(); got != int64(accepted) {
		t.Fatalf("ran %d tasks, accepted %d", got, accepted)
	}
}

// ErrGroupFull refuses only the full family; others are still accepted.
func TestGroupFullIsPerFamily(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	e := start(t, Config[int]{
		Partitions: 1,
		Workers:    1,
		MaxPending: 3,
		Handler: func(tk Task[int]) Result {
			<-gate
			return Success
		},
	})
	defer close(gate)
	submit(t, e, IntKey(7), NextOnError, 0) // starts and holds the worker
	if err := e.barrier(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		submit(t, e, IntKey(7), NextOnError, i)
	}
	if err := e.TrySubmit(IntKey(7), 4); !errors.Is(err, ErrGroupFull) {
		t.Fatalf("fourth waiting task: got %v, want ErrGroupFull", err)
	}
	if err := e.TrySubmit(StringKey("other"), 0); err != nil {
		t.Fatalf("another family: %v", err)
	}
	if got := Total(e.Stats()).RejectedGroupFull; got != 1 {
		t.Fatalf("RejectedGroupFull = %d, want 1", got)
	}
}

// Close under load: producers race Close; every task TrySubmit accepted
// runs, and TrySubmit reports ErrClosed afterwards.
func TestCloseUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	e, err := New(Config[int]{
		Partitions: 2,
		RingSize:   64,
		Handler: func(tk Task[int]) Result {
			if tk.Value()%3 == 0 {
				go tk.Complete(Success)
				return Later
			}
			ran.Add(1)
			return Success
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var accepted, asyncAccepted atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for p := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := IntKey(int64(p*1000 + i%50))
				if p == 3 {
					key = IntKey(-1)
				}
				switch err := e.TrySubmit(key, i); {
				case err == nil:
					accepted.Add(1)
					if i%3 == 0 {
						asyncAccepted.Add(1)
					}
				case errors.Is(err, ErrClosed):
					return
				case errors.Is(err, ErrBusy):
					runtime.Gosched()
				default:
					t.Errorf("TrySubmit: %v", err)
					return
				}
			}
		})
	}
	for accepted.Load() < 20000 {
		runtime.Gosched()
	}
	closeEngine(t, e)
	close(stop)
	wg.Wait()
	st := Total(e.Stats())
	if got, want := ran.Load()+asyncAccepted.Load(), accepted.Load(); got != want {
		t.Fatalf("ran %d tasks, accepted %d", got, want)
	}
	if st.Completed != uint64(accepted.Load()) || st.Submitted != st.Completed {
		t.Fatalf("stats %+v, accepted %d", st, accepted.Load())
	}
	if err := e.TrySubmit(IntKey(1), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySubmit after Close: %v", err)
	}
	if err := e.Unblock(IntKey(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Unblock after Close: %v", err)
	}
}

// Close with an expired context gives up on unstarted tasks, hands them to
// OnAbandon and still stops every goroutine it can.
func TestCloseContextExpiryAbandons(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var abandoned atomic.Int64
	e, err := New(Config[int]{
		Partitions: 1,
		Workers:    1,
		OnAbandon:  func(Key, int) { abandoned.Add(1) },
		Handler: func(tk Task[int]) Result {
			<-gate
			return Success
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		submit(t, e, IntKey(5), NextOnError, i)
	}
	if err := e.barrier(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v", err)
	}
	if got := abandoned.Load(); got != 9 {
		t.Fatalf("abandoned %d, want 9 (one was running)", got)
	}
	close(gate) // let the running handler return so its worker exits
	closeEngine(t, e)
}

// A million distinct keys passing through leave no families behind, and
// the memory they used is given back.
func TestIdleFamiliesAreForgotten(t *testing.T) {
	var ran atomic.Int64
	const keys = 1_000_000
	done := make(chan struct{})
	e := start(t, Config[int]{
		Partitions: 2,
		Handler: func(tk Task[int]) Result {
			if ran.Add(1) == keys {
				close(done)
			}
			return Success
		},
	})
	before := heapInUse()
	for i := range keys {
		if i%2 == 0 {
			submit(t, e, IntKey(int64(i+1)), NextOnError, i)
		} else {
			submit(t, e, StringKey("k"+strconv.Itoa(i)), NextOnError, i)
		}
	}
	waitClosed(t, done, "a million tasks")
	// The handler counted the last task before its completion reached the
	// loop; wait until the loop has applied every completion.
	waitStats(t, e, func(s PartitionStats) bool { return s.Completed == keys })
	if got := Total(e.Stats()).ActiveFamilies; got != 0 {
		t.Fatalf("%d families still tracked", got)
	}
	after := heapInUse()
	if grown := int64(after) - int64(before); grown > 16<<20 {
		t.Fatalf("heap grew by %d MiB after a million keys passed through", grown>>20)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// Stats snapshots are read while the loops publish: every snapshot must be
// one the loop could have been in, never a mix of two steps.
func TestStatsSnapshotsAreConsistent(t *testing.T) {
	t.Parallel()
	e := start(t, Config[int]{
		Partitions: 2,
		Handler: func(tk Task[int]) Result {
			if tk.Value()%2 == 0 {
				go tk.Complete(Success)
				return Later
			}
			return Success
		},
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if e.TrySubmit(IntKey(int64(i%64+1)), i) != nil {
				runtime.Gosched()
			}
		}
	})
	for range 200_000 {
		for _, s := range e.Stats() {
			if s.Dispatched+s.Queued != s.Submitted || s.Completed+s.Failed+s.InFlight != s.Dispatched {
				close(stop)
				wg.Wait()
				t.Fatalf("torn snapshot: %+v", s)
			}
		}
	}
	close(stop)
	wg.Wait()
}

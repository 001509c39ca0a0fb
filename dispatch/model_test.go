package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The model-based test drives an engine with random submissions,
// completions, unblocks and skips, and after each step compares it with a
// reference model: which tasks are running, their seq and attempt numbers,
// the error values returned, the per-family bound, and the counters. It
// checks FIFO, single in flight and exactly-once together, because the
// model starts exactly the tasks that may start.
func TestEngineMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newModelRun(rt)
		defer m.finish(rt)
		rt.Repeat(map[string]func(*rapid.T){
			"submit":   m.submit,
			"complete": m.complete,
			"unblock":  func(rt *rapid.T) { m.resolve(rt, false) },
			"skip":     func(rt *rapid.T) { m.resolve(rt, true) },
			"":         m.check,
		})
	})
}

var modelKeys = []Key{
	IntKey(1), IntKey(2), IntKey(3), StringKey("a"), StringKey("b"),
	IntKey(0), IntKey(-1), StringKey(""),
}

type mtask struct {
	id      int
	key     Key
	mode    Mode
	seq     uint64
	attempt int
}

type mfam struct {
	queue    []*mtask
	inflight *mtask
	blocked  *mtask
	nextSeq  uint64
}

type modelRun struct {
	e          *Engine[int]
	started    chan Task[int]
	maxPending int
	fams       map[Key]*mfam
	running    map[int]*mtask    // started, not completed, by id
	handles    map[int]Task[int] // engine handles of running tasks
	nextID     int
	dispatched uint64
	mu         sync.Mutex // OnAbandon runs on every partition's goroutine
	abandoned  []int
}

func newModelRun(rt *rapid.T) *modelRun {
	m := &modelRun{
		started:    make(chan Task[int], 1024),
		maxPending: rapid.IntRange(1, 3).Draw(rt, "maxPending"),
		fams:       map[Key]*mfam{},
		running:    map[int]*mtask{},
		handles:    map[int]Task[int]{},
	}
	e, err := New(Config[int]{
		Partitions: rapid.SampledFrom([]int{1, 2, 4}).Draw(rt, "partitions"),
		Workers:    rapid.IntRange(1, 2).Draw(rt, "workers"),
		Slice:      rapid.IntRange(1, 3).Draw(rt, "slice"),
		MaxPending: m.maxPending,
		RingSize:   64,
		Handoff:    64,
		Handler: func(tk Task[int]) Result {
			m.started <- tk
			return Later
		},
		OnAbandon: func(_ Key, v int) {
			m.mu.Lock()
			m.abandoned = append(m.abandoned, v)
			m.mu.Unlock()
		},
	})
	if err != nil {
		rt.Fatal(err)
	}
	m.e = e
	return m
}

func (m *modelRun) submit(rt *rapid.T) {
	key := rapid.SampledFrom(modelKeys).Draw(rt, "key")
	mode := rapid.SampledFrom([]Mode{NextOnError, BlockOnError, Immediate, Mode(9)}).Draw(rt, "mode")
	id := m.nextID
	m.nextID++
	got := m.e.TrySubmitMode(key, mode, id)

	var want error
	gated := mode != Immediate && key.Correlated()
	switch {
	case mode > Immediate:
		want = ErrInvalidMode
	case gated && m.fams[key] != nil && len(m.fams[key].queue) >= m.maxPending:
		want = ErrGroupFull
	}
	if !errors.Is(got, want) {
		rt.Fatalf("TrySubmitMode(%v, %v) = %v, want %v", key, mode, got, want)
	}
	if got == nil {
		task := &mtask{id: id, key: key, mode: mode}
		if gated {
			f := m.family(key)
			f.nextSeq++
			task.seq = f.nextSeq
			f.queue = append(f.queue, task)
		} else {
			m.start(task)
		}
	}
	m.settle(rt)
}

func (m *modelRun) complete(rt *rapid.T) {
	if len(m.running) == 0 {
		rt.Skip("nothing running")
	}
	ids := make([]int, 0, len(m.running))
	for id := range m.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := rapid.SampledFrom(ids).Draw(rt, "task")
	ok := rapid.Bool().Draw(rt, "success")
	task := m.running[id]
	r := Failure
	if ok {
		r = Success
	}
	m.handles[id].Complete(r)
	delete(m.running, id)
	delete(m.handles, id)
	if f := m.fams[task.key]; f != nil && f.inflight == task {
		f.inflight = nil
		if !ok && task.mode == BlockOnError {
			f.blocked = task
		}
		m.forgetIdle(task.key)
	}
	m.settle(rt)
}

func (m *modelRun) resolve(rt *rapid.T, skip bool) {
	key := rapid.SampledFrom(modelKeys).Draw(rt, "key")
	var got error
	if skip {
		got = m.e.Skip(key)
	} else {
		got = m.e.Unblock(key)
	}
	f := m.fams[key]
	var want error
	switch {
	case !key.Correlated():
		want = ErrUncorrelated
	case f == nil || f.blocked == nil:
		want = ErrNotBlocked
	}
	if !errors.Is(got, want) {
		rt.Fatalf("resolve(%v, skip=%v) = %v, want %v", key, skip, got, want)
	}
	if want == nil {
		head := f.blocked
		f.blocked = nil
		if !skip {
			f.queue = append([]*mtask{head}, f.queue...)
		}
		m.forgetIdle(key)
	}
	m.settle(rt)
}

func (m *modelRun) family(k Key) *mfam {
	f := m.fams[k]
	if f == nil {
		f = &mfam{}
		m.fams[k] = f
	}
	return f
}

func (m *modelRun) forgetIdle(k Key) {
	if f := m.fams[k]; f != nil && f.inflight == nil && f.blocked == nil && len(f.queue) == 0 {
		delete(m.fams, k)
	}
}

func (m *modelRun) start(task *mtask) {
	task.attempt++
	m.running[task.id] = task
	m.dispatched++
}

// settle starts every task the model allows, then waits for the engine to
// do the same and compares what it started.
func (m *modelRun) settle(rt *rapid.T) {
	var want []int
	for _, f := range m.fams {
		if f.inflight == nil && f.blocked == nil && len(f.queue) > 0 {
			f.inflight = f.queue[0]
			f.queue = f.queue[1:]
			m.start(f.inflight)
		}
	}
	for id := range m.running {
		if _, ok := m.handles[id]; !ok {
			want = append(want, id)
		}
	}
	if err := m.e.barrier(); err != nil {
		rt.Fatal(err)
	}
	for range want {
		select {
		case tk := <-m.started:
			m.observe(rt, tk)
		case <-time.After(waitLimit):
			rt.Fatalf("engine did not start %v", want)
		}
	}
	if got := Total(m.e.Stats()).Dispatched; got != m.dispatched {
		rt.Fatalf("engine dispatched %d tasks, model %d", got, m.dispatched)
	}
}

func (m *modelRun) observe(rt *rapid.T, tk Task[int]) {
	id := tk.Value()
	task, ok := m.running[id]
	if !ok {
		rt.Fatalf("engine started task %d, which the model does not run", id)
	}
	if _, dup := m.handles[id]; dup {
		rt.Fatalf("engine started task %d twice", id)
	}
	got := fmt.Sprintf("key=%v mode=%v seq=%d attempt=%d", tk.Key(), tk.Mode(), tk.Seq(), tk.Attempt())
	want := fmt.Sprintf("key=%v mode=%v seq=%d attempt=%d", task.key, task.mode, task.seq, task.attempt)
	if got != want {
		rt.Fatalf("task %d: engine %s, model %s", id, got, want)
	}
	m.handles[id] = tk
}

func (m *modelRun) check(rt *rapid.T) {
	st := Total(m.e.Stats())
	blocked := 0
	for _, f := range m.fams {
		if f.blocked != nil {
			blocked++
		}
	}
	if st.ActiveFamilies != uint64(len(m.fams)) || st.BlockedFamilies != uint64(blocked) {
		rt.Fatalf("engine has %d families (%d blocked), model %d (%d)",
			st.ActiveFamilies, st.BlockedFamilies, len(m.fams), blocked)
	}
	if st.InFlight != uint64(len(m.running)) {
		rt.Fatalf("engine has %d in flight, model %d", st.InFlight, len(m.running))
	}
}

// finish completes everything still running, closes the engine and checks
// that exactly the blocked families' tasks were abandoned, in order.
func (m *modelRun) finish(rt *rapid.T) {
	for len(m.running) > 0 {
		for id, task := range m.running {
			m.handles[id].Complete(Success)
			delete(m.running, id)
			delete(m.handles, id)
			if f := m.fams[task.key]; f != nil && f.inflight == task {
				f.inflight = nil
				m.forgetIdle(task.key)
			}
		}
		m.settle(rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := m.e.Close(ctx); err != nil {
		rt.Fatalf("Close: %v", err)
	}
	var want []int
	keys := make([]Key, 0, len(m.fams))
	for k := range m.fams {
		keys = append(keys, k)
	}
	for _, k := range keys {
		f := m.fams[k]
		want = append(want, f.blocked.id)
		for _, task := range f.queue {
			want = append(want, task.id)
		}
	}
	got := append([]int(nil), m.abandoned...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		rt.Fatalf("abandoned %v, want %v", m.abandoned, want)
	}
	checkAbandonOrder(rt, m.abandoned, m.fams)
}

// checkAbandonOrder verifies that each family's abandoned tasks come head
// first, then in queue order.
func checkAbandonOrder(rt *rapid.T, abandoned []int, fams map[Key]*mfam) {
	pos := map[int]int{}
	for i, id := range abandoned {
		pos[id] = i
	}
	for k, f := range fams {
		prev := pos[f.blocked.id]
		for _, task := range f.queue {
			if pos[task.id] < prev {
				rt.Fatalf("family %v abandoned out of order: %v", k, abandoned)
			}
			prev = pos[task.id]
		}
	}
}

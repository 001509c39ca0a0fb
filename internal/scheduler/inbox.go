package scheduler

import "sync"

// inbox is the partition's queue of work from other goroutines: API
// requests (bounded) and internal events (journal and delivery
// callbacks, never refused).
type inbox struct {
	mu       sync.Mutex
	msgs     []func()
	spare    []func()
	requests int
	limit    int
	closed   bool
	signal   chan struct{}
}

// init makes a closed inbox: requests are refused until open.
func (in *inbox) init(limit int) {
	in.limit = limit
	in.closed = true
	in.signal = make(chan struct{}, 1)
}

func (in *inbox) open() {
	in.mu.Lock()
	in.closed = false
	in.mu.Unlock()
}

// request queues an API request, refusing it when the inbox is full or
// closed.
func (in *inbox) request(m func()) error {
	in.mu.Lock()
	switch {
	case in.closed:
		in.mu.Unlock()
		return ErrClosed
	case in.requests >= in.limit:
		in.mu.Unlock()
		return ErrBusy
	}
	in.requests++
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	in.notify()
	return nil
}

// post queues an internal event.
func (in *inbox) post(m func()) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	in.notify()
}

func (in *inbox) notify() {
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

func (in *inbox) take() []func() {
	in.mu.Lock()
	msgs := in.msgs
	clear(in.spare) // drop the closures run last time
	in.msgs = in.spare[:0]
	in.spare = msgs
	in.requests = 0
	in.mu.Unlock()
	return msgs
}

func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}

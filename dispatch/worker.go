package dispatch

import "sync"

// worker runs the handler for tasks handed off by the loop until the loop
// closes the handoff channel.
func (p *partition[T]) worker(wg *sync.WaitGroup) {
	defer wg.Done()
	for t := range p.work {
		if p.starved.Load() && p.starved.CompareAndSwap(true, false) {
			p.wake()
		}
		h := t.handle()
		if r := p.call(h); r != Later {
			t.finish(h.gen, r)
		}
	}
}

// call runs the handler, turning a panic into a failure. If the handler
// completed the task itself before panicking, there is nothing left to do.
func (p *partition[T]) call(h Task[T]) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			if p.cfg.OnPanic != nil {
				p.cfg.OnPanic(h, v)
			}
			r = Failure
			if h.t.state.Load() != h.gen<<1 {
				r = Later
			}
		}
	}()
	return p.cfg.Handler(h)
}

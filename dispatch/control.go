package dispatch

// request asks the loop to carry out op and waits for its answer.
func (p *partition[T]) request(op *ctrlOp) error {
	op.reply = make(chan error, 1)
	p.ctrlMu.Lock()
	if p.stopped {
		p.ctrlMu.Unlock()
		return ErrClosed
	}
	p.ctrl = append(p.ctrl, op)
	p.ctrlN.Add(1)
	p.ctrlMu.Unlock()
	p.wake()
	return <-op.reply
}

func (p *partition[T]) takeControl() []*ctrlOp {
	p.ctrlMu.Lock()
	ops := p.ctrl
	p.ctrl = nil
	p.ctrlN.Store(0)
	p.ctrlMu.Unlock()
	return ops
}

// control carries out one request and reports how much work it made.
func (p *partition[T]) control(op *ctrlOp) int {
	if op.kind == ctrlBarrier {
		p.barriers = append(p.barriers, op)
		return 0
	}
	f := p.find(op.key)
	if f == nil || !f.blocked {
		p.replies = append(p.replies, ctrlReply{op, ErrNotBlocked})
		return 0
	}
	head := f.head
	f.head, f.blocked = nil, false
	p.blocked--
	if op.kind == ctrlSkip {
		p.recycle(head)
	} else {
		head.rearm()
		f.pending.pushFront(head)
		p.cnt.queued++
	}
	f.turn = 0
	p.requeue(f)
	p.replies = append(p.replies, ctrlReply{op, nil})
	return 1
}

// shutdown answers what is still asked of the loop, hands every unrun task
// to OnAbandon, and stops the workers.
func (p *partition[T]) shutdown() {
	p.ctrlMu.Lock()
	p.stopped = true
	ops := p.ctrl
	p.ctrl = nil
	p.ctrlMu.Unlock()
	for _, r := range p.replies {
		r.op.reply <- r.err
	}
	for _, op := range append(ops, p.barriers...) {
		op.reply <- ErrClosed
	}
	for {
		e, ok := p.ring.pop()
		if !ok {
			break
		}
		p.accept(&e)
	}
	for p.ready.len() > 0 {
		if it := p.ready.popFront(); it.task != nil {
			p.abandon(it.task)
		}
	}
	for _, f := range p.ints {
		p.abandonFamily(f)
	}
	for _, f := range p.names {
		p.abandonFamily(f)
	}
	p.publish()
	close(p.work)
}

func (p *partition[T]) abandonFamily(f *family[T]) {
	if f.head != nil {
		p.abandon(f.head)
	}
	for f.pending.len() > 0 {
		p.abandon(f.pending.popFront())
	}
}

func (p *partition[T]) abandon(t *task[T]) {
	p.cnt.abandoned++
	if p.cfg.OnAbandon != nil {
		p.cfg.OnAbandon(t.key, t.value)
	}
}

package scheduler

import (
	"errors"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// register decides a new task on shard and answers after it is durable.
func (p *partition) register(req *RegisterRequest, shard uint16, done func(result)) {
	now := p.now().UnixMilli()
	ik := ""
	if req.IdempotencyKey != "" {
		ik = req.Client + "\x00" + req.IdempotencyKey
		if w := p.idem[ik]; w != nil {
			w.waiters = append(w.waiters, done)
			return
		}
		if t, ok, err := p.byIdempotency(shard, req.Client, req.IdempotencyKey); err != nil || ok {
			done(result{view: p.view(t), err: err})
			return
		}
	}
	t := &storepb.Task{
		Id:             p.allocID(shard),
		Client:         req.Client,
		Group:          req.Group,
		Payload:        req.Payload,
		DueMs:          dueMs(req, now),
		IntervalMs:     req.Interval.Milliseconds(),
		Mode:           req.Mode,
		IdempotencyKey: req.IdempotencyKey,
		Retry:          req.Retry,
		Callback:       req.Callback,
		CreatedMs:      now,
		UpdatedMs:      now,
	}
	if t.Mode == storepb.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		t.Mode = p.s.cfg.DefaultMode
	}
	releaseGroup := func() {}
	if req.Group != "" {
		g, release, err := p.group(req.Client, req.Group)
		if err != nil {
			done(result{err: err})
			return
		}
		t.Seq = g.rec.NextSeq
		g.rec.NextSeq++
		p.open.b.PutGroup(g.rec)
		releaseGroup = release
	}
	p.open.b.PutTask(t)
	var w *idemWait
	if ik != "" {
		p.open.b.PutIdempotency(shard, req.Client, req.IdempotencyKey, t.Id)
		w = &idemWait{task: t}
		p.idem[ik] = w
	}
	release := p.decide(t.Id, t)
	p.thenAck(func(err error) {
		release()
		releaseGroup()
		if w != nil {
			delete(p.idem, ik)
		}
		if err == nil {
			p.s.counters.registered.Add(1)
			p.schedule(t)
		}
		done(result{view: TaskView{Task: t, Status: StatusScheduled}, created: true, err: err})
		if w != nil {
			for _, waiter := range w.waiters {
				waiter(result{view: TaskView{Task: t, Status: StatusScheduled}, err: err})
			}
		}
	})
}

// byIdempotency finds the live task an idempotency key points at.
func (p *partition) byIdempotency(shard uint16, client, key string) (*storepb.Task, bool, error) {
	id, err := p.s.cfg.Store.Idempotency(shard, client, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return p.current(id)
}

func dueMs(req *RegisterRequest, now int64) int64 {
	if !req.At.IsZero() {
		return req.At.UnixMilli()
	}
	return now + req.Delay.Milliseconds()
}

// lookup finds a task the caller may see.
func (p *partition) lookup(c Caller, id uint64) (*storepb.Task, error) {
	t, ok, err := p.current(id)
	switch {
	case err != nil:
		return nil, err
	case !ok || !c.owns(t.Client):
		return nil, ErrNotFound
	}
	return t, nil
}

// view adds the loop's status to a task.
func (p *partition) view(t *storepb.Task) TaskView {
	if t == nil {
		return TaskView{}
	}
	v := TaskView{Task: t, Status: StatusScheduled}
	if f := p.flights[t.Id]; f != nil {
		switch f.state {
		case flightQueued:
			v.Status = StatusQueued
		case flightRetrying:
			v.Status = StatusRetrying
		default:
			v.Status = StatusDelivering
		}
	} else if t.NextAttemptMs > 0 {
		v.Status = StatusRetrying
	}
	return v
}

func (p *partition) get(c Caller, id uint64, done func(result)) {
	t, err := p.lookup(c, id)
	done(result{view: p.view(t), err: err})
}

// editable reports whether a task may be changed now: not while an attempt
// is under way or its outcome is being recorded.
func (p *partition) editable(id uint64) error {
	if f := p.flights[id]; f != nil && (f.state == flightDelivering || f.state == flightSettling) {
		return ErrInFlight
	}
	return nil
}

func (p *partition) update(c Caller, req *UpdateRequest, done func(result)) {
	t, err := p.lookup(c, req.ID)
	if err == nil {
		err = p.editable(req.ID)
	}
	if err != nil {
		done(result{err: err})
		return
	}
	upd := clone(t)
	if req.Payload != nil {
		upd.Payload = req.Payload
	}
	if req.Interval != nil {
		upd.IntervalMs = req.Interval.Milliseconds()
	}
	if req.At != nil {
		// A new due time starts a new occurrence.
		upd.DueMs = req.At.UnixMilli()
		upd.Attempts, upd.NextAttemptMs, upd.LastError = 0, 0, ""
	}
	upd.UpdatedMs = p.now().UnixMilli()
	// The timer stays: if the task comes due before the change is
	// durable it still takes its place in its group, then waits there.
	if f := p.flights[upd.Id]; f != nil {
		f.stale = true
	}
	p.open.b.ReplaceTask(t, upd)
	release := p.decide(upd.Id, upd)
	p.thenAck(func(err error) {
		release()
		if err == nil {
			p.applyChange(upd)
			p.resume(upd.Id)
		}
		done(result{view: p.view(upd), err: err})
	})
}

func (p *partition) cancel(c Caller, id uint64, done func(result)) {
	t, err := p.lookup(c, id)
	if err == nil {
		err = p.editable(id)
	}
	if err != nil {
		done(result{err: err})
		return
	}
	p.unschedule(id)
	if f := p.flights[id]; f != nil {
		f.stale = true
	}
	p.open.b.DeleteTask(t)
	if t.IdempotencyKey != "" {
		p.open.b.DeleteIdempotency(store.ShardOf(id), t.Client, t.IdempotencyKey)
	}
	release := p.decide(id, nil)
	p.thenAck(func(err error) {
		release()
		if err == nil {
			if f := p.flights[id]; f != nil && f.state == flightRetrying {
				p.release(f, true)
			}
			p.resume(id)
		}
		done(result{view: TaskView{Task: t}, err: err})
	})
}

// applyChange puts an updated task back in line. One not yet fired is
// armed for its (maybe new) due time; a queued one is left to its start,
// which reads it again; a retrying one restarts from its new occurrence or
// keeps waiting for its retry.
func (p *partition) applyChange(t *storepb.Task) {
	f := p.flights[t.Id]
	switch {
	case f == nil:
		p.unschedule(t.Id)
		p.schedule(t)
	case f.state != flightRetrying:
	case t.NextAttemptMs == 0:
		p.release(f, true)
		p.schedule(t)
	default:
		f.task = t
		p.arm(t.Id, t.NextAttemptMs)
	}
}

package scheduler

import (
	"errors"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// register decides a new task on shard and answers after it is durable.
func (p *partition) register(req *RegisterRequest, shard uint16, done func(result)) {
	p.begin(shard, storepb.Op_OP_REGISTER)
	now := p.wallMs()
	ik := ""
	if req.IdempotencyKey != "" {
		ik = req.Client + "\x00" + req.IdempotencyKey
		if w := p.idem[ik]; w != nil {
			w.waiters = append(w.waiters, done)
			return
		}
		if v, ok, err := p.byIdempotency(shard, req.Client, req.IdempotencyKey); err != nil || ok {
			done(result{view: v, err: err})
			return
		}
	}
	if p.replaceWaiting(req, shard, done) {
		return
	}
	id, err := p.allocID(shard)
	if err != nil {
		done(result{err: err})
		return
	}
	t := &storepb.Task{
		Id:             id,
		Seq:            id,
		Client:         req.Client,
		Group:          req.Group,
		Payload:        req.Payload,
		DueMs:          firstDue(req, now),
		IntervalMs:     req.Interval.Milliseconds(),
		Mode:           req.Mode,
		Cron:           req.Cron,
		TimeZone:       req.TimeZone,
		IdempotencyKey: req.IdempotencyKey,
		ReplaceKey:     req.ReplaceKey,
		Retry:          req.Retry,
		Callback:       req.Callback,
		CreatedMs:      now,
		UpdatedMs:      now,
	}
	if t.Mode == storepb.DispatchMode_DISPATCH_MODE_UNSPECIFIED {
		t.Mode = p.s.cfg.DefaultMode
	}
	if t.Cron != "" {
		t.DueMs = cronFirst(t.Cron, t.TimeZone, t.DueMs)
	}
	if err := p.groupHasRoom(t); err != nil {
		done(result{err: err})
		return
	}
	// The task record holds every string of the registration: once it is
	// in the batch, the group record and idempotency key encode too.
	if err := p.cmd().PutTask(t); err != nil {
		done(result{err: err})
		return
	}
	p.noteReplaceKey(t)
	releaseRec, err := p.countTask(t, +1)
	if err != nil { // a storage failure: the task is in the batch
		p.s.fail(err)
		done(result{err: err})
		return
	}
	var w *idemWait
	if ik != "" {
		_ = p.cmd().PutIdempotency(shard, req.Client, req.IdempotencyKey, t.Id, now)
		p.idemKeys[shard]++
		w = &idemWait{task: t}
		p.idem[ik] = w
	}
	dec := p.decide(t.Id, t)
	p.then(func(err error) {
		p.undo(dec)
		releaseRec()
		if w != nil {
			delete(p.idem, ik)
		}
		if err == nil {
			p.s.counters.registered.Add(1)
			p.applyTask(t)
		}
		done(result{view: p.view(t), created: true, err: err})
		if w != nil {
			for _, waiter := range w.waiters {
				waiter(result{view: p.view(t), err: err})
			}
		}
	})
}

// groupHasRoom refuses a task its group has no room for.
func (p *partition) groupHasRoom(t *storepb.Task) error {
	if t.Group == "" {
		return nil
	}
	g, release, err := p.groupRecord(t.Client, t.Group)
	if err != nil {
		return err
	}
	defer release()
	if g.rec.Tasks >= uint64(p.s.cfg.GroupLimit(t.Client)) {
		return ErrGroupFull
	}
	return nil
}

// byIdempotency finds what an idempotency key created: the task as it is
// now, or, once it has finished, a view saying so.
func (p *partition) byIdempotency(shard uint16, client, key string) (TaskView, bool, error) {
	id, _, err := p.s.cfg.Store.Idempotency(shard, client, key)
	if errors.Is(err, store.ErrNotFound) {
		return TaskView{}, false, nil
	}
	if err != nil {
		return TaskView{}, false, err
	}
	t, ok, err := p.current(id)
	if err != nil {
		return TaskView{}, false, err
	}
	if !ok {
		return TaskView{Task: &storepb.Task{Id: id, Client: client, IdempotencyKey: key}, Status: StatusFinished}, true, nil
	}
	return p.view(t), true, nil
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
	v := TaskView{Task: t, Status: statusOf(t, p.wallMs())}
	if f := p.flights[t.Id]; f != nil {
		if f.state == flightRetrying {
			v.Status = StatusRetrying
		} else {
			v.Status = StatusDelivering
		}
	}
	return v
}

// statusOf is a task's status as its record tells it.
func statusOf(t *storepb.Task, nowMs int64) Status {
	switch {
	case t.NextAttemptMs > 0:
		return StatusRetrying
	case t.DueMs <= nowMs:
		return StatusQueued
	}
	return StatusScheduled
}

// get answers once no decision on the task is pending, so that it shows
// only what is durable: a task Get no longer finds is gone from List too.
func (p *partition) get(c Caller, id uint64, done func(result)) {
	if _, changing := p.pending[id]; changing {
		p.waitFor(id, func() { p.get(c, id, done) })
		return
	}
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
	p.begin(store.ShardOf(req.ID), storepb.Op_OP_UPDATE)
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
		upd.Cron, upd.TimeZone = "", ""
	}
	if req.At != nil {
		// A new due time starts a new occurrence.
		upd.DueMs = req.At.UnixMilli()
		upd.Attempts, upd.NextAttemptMs, upd.LastError = 0, 0, ""
	}
	if req.Cron != nil {
		setCron(upd, req, p.wallMs())
	}
	if upd.ReplaceKey != "" && recurring(upd) {
		done(result{err: invalid("replace_key", "is for one-shot tasks, not recurring ones")})
		return
	}
	upd.UpdatedMs = p.wallMs()
	if err := p.cmd().ReplaceTask(t, upd); err != nil {
		done(result{err: err})
		return
	}
	dec := p.decide(upd.Id, upd)
	p.then(func(err error) {
		p.undo(dec)
		if err == nil {
			p.changed(upd, req.At != nil || req.Cron != nil)
		}
		done(result{view: p.view(upd), err: err})
	})
}

func (p *partition) cancel(c Caller, id uint64, done func(result)) {
	p.begin(store.ShardOf(id), storepb.Op_OP_CANCEL)
	t, err := p.lookup(c, id)
	if err == nil {
		err = p.editable(id)
	}
	if err != nil {
		done(result{err: err})
		return
	}
	if err := p.drop(t); err != nil {
		done(result{err: err})
		return
	}
	p.then(func(err error) { done(result{view: TaskView{Task: t}, err: err}) })
}

// drop decides the deletion of a task that is not under way; applied, its
// group goes on if it was holding it.
func (p *partition) drop(t *storepb.Task) error {
	if err := p.cmd().DeleteTask(t); err != nil {
		return err
	}
	releaseRec, err := p.countTask(t, -1)
	if err != nil {
		p.s.fail(err)
		return err
	}
	p.unschedule(t.Id) // suppress it at once; the deletion is not durable yet
	dec := p.decide(t.Id, nil)
	p.then(func(err error) {
		p.undo(dec)
		releaseRec()
		if err == nil {
			p.changed(t, true)
		}
	})
	return nil
}

// changed puts a task back in line after an update or cancel was applied.
// A group's retrying head given a new occurrence (or deleted) gives up its
// place: the group looks at its order again, and the head goes first only
// if it still sorts first.
func (p *partition) changed(t *storepb.Task, newOccurrence bool) {
	if f := p.flights[t.Id]; f != nil && f.state == flightRetrying {
		if !newOccurrence {
			return // the retry goes on, and reads the new record
		}
		p.settle(f, nil)
	}
	if _, ok := p.pending[t.Id]; ok {
		return // a later decision puts it in line
	}
	if cur, ok, err := p.current(t.Id); err == nil && ok {
		p.applyTask(cur)
	}
}

package scheduler

import (
	"strings"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// A registration with a replace key replaces the client's task with that
// key in the same group (or among its ungrouped tasks) while that task
// waits: its payload and due time change, its id and place in the group
// (sequence) stay. Once an attempt has started (under way, or made and
// waiting for a retry) the task is never replaced: the registration
// creates a new one. Finding, deciding and firing all happen on the
// partition loop, so a registration and the task's start are ordered.
//
// With Debounce, each registration with the key makes the task due
// Debounce from then, but with MaxWait no later than MaxWait after the
// registration that created it: the leader computes the time, and the
// record carries it.

// MaxReplaceKeyLen bounds a replace key.
const MaxReplaceKeyLen = 256

func validateReplace(req *RegisterRequest) error {
	switch {
	case len(req.ReplaceKey) > MaxReplaceKeyLen || strings.ContainsRune(req.ReplaceKey, 0):
		return invalid("replace_key", "must be at most %d bytes without NUL", MaxReplaceKeyLen)
	case req.Debounce < 0 || req.Debounce > MaxDelay:
		return invalid("debounce_ms", "must be between 0 and %v, got %v", MaxDelay, req.Debounce)
	case req.MaxWait < 0 || req.MaxWait > MaxDelay:
		return invalid("max_wait_ms", "must be between 0 and %v, got %v", MaxDelay, req.MaxWait)
	case req.MaxWait > 0 && req.Debounce == 0:
		return invalid("max_wait_ms", "needs debounce")
	case req.Debounce > 0 && req.ReplaceKey == "":
		return invalid("debounce_ms", "needs a replace key")
	case req.Debounce > 0 && (!req.At.IsZero() || req.Delay != 0):
		return invalid("debounce_ms", "decides the due time: give no delay or due time with it")
	case req.ReplaceKey == "":
		return nil
	case req.IdempotencyKey != "":
		return invalid("replace_key", "cannot be combined with an idempotency key")
	case req.Interval != 0 || req.Cron != "":
		return invalid("replace_key", "is for one-shot tasks, not recurring ones")
	}
	return nil
}

// debouncedDue is when a debounced task registered or replaced at nowMs
// is due, for a task first registered at createdMs.
func debouncedDue(req *RegisterRequest, nowMs, createdMs int64) int64 {
	due := nowMs + req.Debounce.Milliseconds()
	if req.MaxWait > 0 {
		due = min(due, createdMs+req.MaxWait.Milliseconds())
	}
	return due
}

// replaceRef names a replace key in the loop's overlay of registrations
// not yet applied.
func replaceRef(client, group, key string) string {
	return client + "\x00" + group + "\x00" + key
}

// replaceWaiting replaces the waiting task with the registration's
// replace key, if there is one, and reports whether it did (or failed
// trying, which done was told).
func (p *partition) replaceWaiting(req *RegisterRequest, shard uint16, done func(result)) bool {
	if req.ReplaceKey == "" {
		return false
	}
	t, ok, err := p.replaceTarget(req, shard)
	switch {
	case err != nil:
		done(result{err: err})
		return true
	case !ok:
		return false
	}
	now := p.wallMs()
	upd := clone(t)
	upd.Payload = req.Payload
	upd.DueMs = dueMs(req, now)
	if req.Debounce > 0 {
		upd.DueMs = debouncedDue(req, now, t.CreatedMs)
	}
	upd.UpdatedMs = now
	if err := p.cmd().ReplaceTask(t, upd); err != nil {
		done(result{err: err})
		return true
	}
	dec := p.decide(upd.Id, upd)
	p.then(func(err error) {
		p.undo(dec)
		if err == nil {
			p.changed(upd, true)
		}
		done(result{view: p.view(upd), err: err})
	})
	return true
}

// replaceTarget finds the task with the registration's replace key that
// has not started, if any.
func (p *partition) replaceTarget(req *RegisterRequest, shard uint16) (*storepb.Task, bool, error) {
	if id, ok := p.replacing[replaceRef(req.Client, req.Group, req.ReplaceKey)]; ok {
		if t, ok, err := p.current(id); err != nil || (ok && !p.begun(t)) {
			return t, ok, err
		}
	}
	var found *storepb.Task
	var ferr error
	err := p.s.cfg.Store.ReplaceKeyTasks(shard, req.Client, req.Group, req.ReplaceKey, func(id uint64) bool {
		t, ok, err := p.current(id)
		if err != nil {
			ferr = err
			return false
		}
		if ok && t.ReplaceKey == req.ReplaceKey && !p.begun(t) {
			found = t
			return false
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	return found, found != nil, err
}

// begun reports whether a task's occurrence has begun: an attempt is
// under way, or one was made.
func (p *partition) begun(t *storepb.Task) bool {
	return p.flights[t.Id] != nil || t.Attempts > 0 || t.NextAttemptMs > 0
}

// noteReplaceKey remembers a new task's replace key until its
// registration is applied and the store's index shows it.
func (p *partition) noteReplaceKey(t *storepb.Task) {
	if t.ReplaceKey == "" {
		return
	}
	ref := replaceRef(t.Client, t.Group, t.ReplaceKey)
	p.replacing[ref] = t.Id
	p.then(func(error) {
		if p.replacing[ref] == t.Id {
			delete(p.replacing, ref)
		}
	})
}

// firstDue is a new task's due time.
func firstDue(req *RegisterRequest, nowMs int64) int64 {
	if req.Debounce > 0 {
		return debouncedDue(req, nowMs, nowMs)
	}
	return dueMs(req, nowMs)
}

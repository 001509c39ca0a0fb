package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// Scheduler is what the outbox needs of Boomerang's scheduler, which
// satisfies it. The outbox acts as an admin caller.
type Scheduler interface {
	Register(ctx context.Context, req scheduler.RegisterRequest) (scheduler.TaskView, bool, error)
	RegisterBatch(ctx context.Context, reqs []scheduler.RegisterRequest) ([]scheduler.RegisterResult, error)
	Update(ctx context.Context, c scheduler.Caller, req scheduler.UpdateRequest) (scheduler.TaskView, error)
	UpdateBatch(ctx context.Context, c scheduler.Caller, reqs []scheduler.UpdateRequest) ([]scheduler.UpdateResult, error)
	Cancel(ctx context.Context, c scheduler.Caller, id uint64) error
	Get(ctx context.Context, c scheduler.Caller, id uint64) (scheduler.TaskView, error)
	List(ctx context.Context, c scheduler.Caller, q scheduler.ListQuery) ([]scheduler.TaskView, uint64, error)
	DeadLetters(ctx context.Context, c scheduler.Caller, client string, after uint64, limit int) ([]*storepb.DeadLetter, uint64, error)
}

var _ Scheduler = (*scheduler.Scheduler)(nil)

// admin is the outbox's caller: it works on tasks of its targets' clients.
var admin = scheduler.Caller{Admin: true}

// keyPrefix starts the idempotency key of every outbox task:
// "outbox:<source>:<after>:<row id>". after is empty for a row's first
// registration. The scheduler remembers a key for a while after its task
// has finished, and answers a repeat with the finished task; a row that
// comes back to PENDING (replayed by hand, or its held task cancelled)
// then registers again with after set to that task's id, and so on: each
// key is still the same on every try of the same registration.
const keyPrefix = "outbox:"

func idempotencyKey(source, after, id string) string {
	return keyPrefix + source + ":" + after + ":" + id
}

// parseKey splits an outbox task's idempotency key.
func parseKey(key string) (source, id string, ok bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", "", false
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// Outbox runs every configured source of a process. Create it with New
// before the scheduler (its Finished is the scheduler's OnFinished), Start
// it once the scheduler runs, and Stop it after the scheduler has
// stopped, so that the final outcomes of the deliveries the scheduler
// finished while stopping are written too.
type Outbox struct {
	opts    Options
	sources map[string]*Source
	metrics *metrics
	stop    sync.Once
}

// New checks the configurations and builds the sources; nothing
// connects before Start.
func New(cfgs []Config, opts Options) (*Outbox, error) {
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	m := newMetrics()
	o := &Outbox{opts: opts, sources: map[string]*Source{}, metrics: m}
	for _, cfg := range cfgs {
		cfg.ensureDefaults()
		if err := cfg.validate(); err != nil {
			return nil, err
		}
		if o.sources[cfg.Name] != nil {
			return nil, fmt.Errorf("outbox: two sources are named %q", cfg.Name)
		}
		o.sources[cfg.Name] = newSource(cfg, &o.opts, m.source(cfg.Name))
	}
	return o, nil
}

// Finished takes the scheduler's report of a final outcome (set it as
// scheduler.Config.OnFinished). It never blocks: outcomes of outbox tasks
// are queued for their source, others ignored.
func (o *Outbox) Finished(f scheduler.Finished) {
	src, id, ok := parseKey(f.Task.GetIdempotencyKey())
	if !ok {
		return
	}
	if s := o.sources[src]; s != nil {
		s.finished(id, f)
	}
}

// Start starts every source on sched, with its metrics on reg (nil:
// none). Sources connect in the background and log what keeps them from
// working.
func (o *Outbox) Start(ctx context.Context, sched Scheduler, reg prometheus.Registerer) error {
	if sched == nil {
		return errors.New("outbox: Start needs a scheduler")
	}
	if reg != nil {
		if err := o.metrics.register(reg); err != nil {
			return err
		}
	}
	for _, s := range o.sources {
		s.start(ctx, sched)
	}
	return nil
}

// Stop stops every source: a primary finishes its poll and resigns, the
// final outcomes already reported are written, connections are closed.
// If ctx ends first, outcomes not yet written are left to the recovery
// of the next start (doc.go, "Recovery").
func (o *Outbox) Stop(ctx context.Context) error {
	var errs []error
	o.stop.Do(func() {
		for _, s := range o.sources {
			errs = append(errs, s.stopAndWait(ctx))
		}
	})
	return errors.Join(errs...)
}

// Source returns a source by name, for its status; nil if unknown.
func (o *Outbox) Source(name string) *Source { return o.sources[name] }

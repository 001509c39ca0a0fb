package server

import (
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// BenchmarkAttemptHistory measures what recording attempts for the panel
// adds to each delivery: one attempt and its outcome, then the
// occurrence's finish, against the bare deliverer in the same run.
func BenchmarkAttemptHistory(b *testing.B) {
	settle := scheduler.DelivererFunc(func(_ scheduler.Delivery, done func(error)) { done(nil) })
	cfg := Config{Clock: clockwork.NewRealClock()}
	cfg.Panel.ensureDefaults()
	h := newHistory(&cfg, func(*storepb.Task) storepb.Protocol { return storepb.Protocol_PROTOCOL_HTTP })
	for _, bc := range []struct {
		name   string
		d      scheduler.Deliverer
		finish func(scheduler.Finished)
	}{
		{"bare", settle, func(scheduler.Finished) {}},
		{"recorded", h.wrap(settle), h.finish},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tasks := make([]*storepb.Task, 1024)
			for i := range tasks {
				tasks[i] = &storepb.Task{Id: uint64(i + 1), Client: "c", DueMs: 1}
			}
			done := func(error) {}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				t := tasks[i%len(tasks)]
				bc.d.Deliver(scheduler.Delivery{Task: t, Attempt: 1}, done)
				bc.finish(scheduler.Finished{Task: t, Delivered: true})
			}
		})
	}
}

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestTaskFiresAtItsDueTimeAndIsDeleted(t *testing.T) {
	h := newHarness(t, nil)
	v := h.register(RegisterRequest{Payload: payload("hello"), Delay: 5 * time.Second})
	if v.Status != StatusScheduled || v.Task.DueMs != epoch.Add(5*time.Second).UnixMilli() {
		t.Fatalf("registered %+v", v)
	}
	h.advance(5*time.Second - time.Millisecond)
	h.none()
	h.advance(time.Millisecond)
	a := h.expect("hello", 1)
	if a.Task.Id != v.Task.Id {
		t.Fatalf("delivered task %d, registered %d", a.Task.Id, v.Task.Id)
	}
	h.ack(a)
	if _, err := h.s.Get(context.Background(), Caller{Client: "acme"}, v.Task.Id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delivery: %v, want ErrNotFound", err)
	}
}

func TestPastDueTimeFiresAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.register(RegisterRequest{Payload: payload("late"), At: epoch.Add(-time.Hour)})
	h.settle()
	h.ack(h.expect("late", 1))
}

// A group's tasks are delivered in (due, sequence) order, one at a time,
// while another group runs alongside.
func TestGroupIsFIFOAndSingleInFlight(t *testing.T) {
	h := newHarness(t, nil)
	reg := func(name string, delay time.Duration, group string) {
		h.register(RegisterRequest{Payload: payload(name), Delay: delay, Group: group})
	}
	reg("g-3s", 3*time.Second, "g")
	reg("g-1s-a", time.Second, "g")
	reg("g-2s-a", 2*time.Second, "g")
	reg("g-2s-b", 2*time.Second, "g")
	reg("g-1s-b", time.Second, "g")
	reg("h-1s", time.Second, "h")
	h.advance(3 * time.Second)

	first, other := h.next(), h.next()
	if string(first.Task.Payload) == "h-1s" {
		first, other = other, first
	}
	if string(first.Task.Payload) != "g-1s-a" || string(other.Task.Payload) != "h-1s" {
		t.Fatalf("first attempts %q and %q", first.Task.Payload, other.Task.Payload)
	}
	h.none() // g's next waits for its head
	h.ack(other)
	for _, want := range []string{"g-1s-b", "g-2s-a", "g-2s-b", "g-3s"} {
		h.ack(first)
		first = h.expect(want, 1)
		h.none()
	}
	h.ack(first)
	h.none()
}

// A recurring task's next occurrence follows its previous due time, not
// the delivery time; after downtime the missed occurrences fire once.
func TestRecurringTaskKeepsItsCadence(t *testing.T) {
	h := newHarness(t, nil)
	v := h.register(RegisterRequest{Payload: payload("tick"), Delay: 10 * time.Second, Interval: 10 * time.Second})
	h.advance(10 * time.Second)
	a := h.expect("tick", 1)
	h.advance(3 * time.Second) // a slow receiver
	h.ack(a)
	got, err := h.s.Get(context.Background(), Caller{Client: "acme"}, v.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if want := epoch.Add(20 * time.Second).UnixMilli(); got.Task.DueMs != want || got.Task.Fires != 1 {
		t.Fatalf("next occurrence due %d fires %d, want %d and 1", got.Task.DueMs, got.Task.Fires, want)
	}
	h.advance(7 * time.Second) // t = 20s
	h.ack(h.expect("tick", 1))

	// Down from 20s to 75s: occurrences at 30..70s are missed.
	h.close()
	h.clock.Advance(55 * time.Second)
	h.open()
	h.settle()
	h.ack(h.expect("tick", 1))
	h.none()
	got, err = h.s.Get(context.Background(), Caller{Client: "acme"}, v.Task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if want := epoch.Add(80 * time.Second).UnixMilli(); got.Task.DueMs != want {
		t.Fatalf("after downtime next due %v, want %v", time.UnixMilli(got.Task.DueMs).Sub(epoch), 80*time.Second)
	}
}

func TestCancelledTaskNeverFires(t *testing.T) {
	h := newHarness(t, nil)
	c := Caller{Client: "acme"}
	v := h.register(RegisterRequest{Payload: payload("x"), Delay: time.Second})
	if err := h.s.Cancel(context.Background(), c, v.Task.Id); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Hour)
	h.none()
	if err := h.s.Cancel(context.Background(), c, v.Task.Id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Cancel: %v", err)
	}
}

func TestCancelDuringDeliveryIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	c := Caller{Client: "acme"}
	v := h.register(RegisterRequest{Payload: payload("x")})
	h.settle()
	a := h.expect("x", 1)
	if err := h.s.Cancel(context.Background(), c, v.Task.Id); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Cancel while delivering: %v, want ErrInFlight", err)
	}
	if _, err := h.s.Update(context.Background(), c, UpdateRequest{ID: v.Task.Id, Payload: payload("y")}); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Update while delivering: %v, want ErrInFlight", err)
	}
	h.ack(a)
}

// Tasks queued behind their group's head can be cancelled or updated; the
// group goes on with what is left, in order.
func TestQueuedTasksCanBeCancelledAndUpdated(t *testing.T) {
	h := newHarness(t, nil)
	c := Caller{Client: "acme"}
	h.register(RegisterRequest{Payload: payload("head"), Group: "g"})
	cancelled := h.register(RegisterRequest{Payload: payload("cancelled"), Group: "g"})
	edited := h.register(RegisterRequest{Payload: payload("before"), Group: "g"})
	moved := h.register(RegisterRequest{Payload: payload("moved"), Group: "g"})
	h.register(RegisterRequest{Payload: payload("last"), Group: "g"})
	h.settle()
	head := h.expect("head", 1)
	if v, _ := h.s.Get(context.Background(), c, cancelled.Task.Id); v.Status != StatusQueued {
		t.Fatalf("status behind head %v, want QUEUED", v.Status)
	}
	if err := h.s.Cancel(context.Background(), c, cancelled.Task.Id); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Update(context.Background(), c, UpdateRequest{ID: edited.Task.Id, Payload: payload("after")}); err != nil {
		t.Fatal(err)
	}
	later := epoch.Add(time.Minute)
	if _, err := h.s.Update(context.Background(), c, UpdateRequest{ID: moved.Task.Id, At: &later}); err != nil {
		t.Fatal(err)
	}
	h.ack(head)
	h.ack(h.expect("after", 1))
	h.ack(h.expect("last", 1))
	h.none()
	h.advance(time.Minute)
	h.ack(h.expect("moved", 1))
}

// Only tasks inside the horizon are in the wheel; the loader brings later
// ones in as their window opens, and update and cancel work in both tiers.
func TestTasksBeyondTheHorizonAreLoadedInTime(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Horizon = time.Minute; c.LoadInterval = 10 * time.Second })
	c := Caller{Client: "acme"}
	far := h.register(RegisterRequest{Payload: payload("far"), Delay: 5 * time.Minute})
	gone := h.register(RegisterRequest{Payload: payload("gone"), Delay: 5 * time.Minute})
	near := h.register(RegisterRequest{Payload: payload("near"), Delay: 10 * time.Minute})
	h.register(RegisterRequest{Payload: payload("soon"), Delay: 30 * time.Second})
	if n := h.wheelLen(); n != 1 {
		t.Fatalf("wheel holds %d tasks, want only the one inside the horizon", n)
	}
	if err := h.s.Cancel(context.Background(), c, gone.Task.Id); err != nil {
		t.Fatal(err)
	}
	soon := epoch.Add(2 * time.Minute)
	if _, err := h.s.Update(context.Background(), c, UpdateRequest{ID: near.Task.Id, At: &soon}); err != nil {
		t.Fatal(err)
	}
	h.advance(30 * time.Second)
	h.ack(h.expect("soon", 1))
	for range 9 { // to 2m, in loader steps
		h.advance(10 * time.Second)
	}
	h.ack(h.expect("near", 1))
	for range 17 { // to 4m50s
		h.advance(10 * time.Second)
	}
	h.none()
	if n := h.wheelLen(); n != 1 {
		t.Fatalf("wheel holds %d tasks at 4m50s, want the far one", n)
	}
	h.advance(10 * time.Second)
	a := h.expect("far", 1)
	if a.Task.Id != far.Task.Id {
		t.Fatalf("delivered %d, want %d", a.Task.Id, far.Task.Id)
	}
	h.ack(a)
	h.advance(time.Hour)
	h.none()
}

func (h *harness) wheelLen() int {
	n := 0
	for _, p := range h.s.parts {
		_, _ = h.s.call(context.Background(), p, func(done func(result)) {
			n += p.wheel.Len()
			done(result{})
		})
	}
	return n
}

func TestIdempotencyKeyReturnsTheFirstTask(t *testing.T) {
	h := newHarness(t, nil)
	req := RegisterRequest{Client: "acme", Payload: payload("once"), Delay: time.Minute, IdempotencyKey: "order-17"}
	first, created, err := h.s.Register(context.Background(), req)
	if err != nil || !created {
		t.Fatalf("first Register: created %v err %v", created, err)
	}
	req.Payload = payload("twice")
	again, created, err := h.s.Register(context.Background(), req)
	if err != nil || created || again.Task.Id != first.Task.Id || string(again.Task.Payload) != "once" {
		t.Fatalf("repeat: created %v err %v task %v", created, err, again.Task)
	}
	other, created, err := h.s.Register(context.Background(), RegisterRequest{Client: "globex", Delay: time.Hour, IdempotencyKey: "order-17"})
	if err != nil || !created || other.Task.Id == first.Task.Id {
		t.Fatalf("another client's key: created %v err %v", created, err)
	}
	h.advance(time.Minute)
	h.ack(h.expect("once", 1))
	// The key outlives its task: a client retrying a registration whose
	// response it lost gets the finished task, not a second one.
	done, created, err := h.s.Register(context.Background(), req)
	if err != nil || created || done.Task.Id != first.Task.Id || done.Status != StatusFinished {
		t.Fatalf("after the task finished: created %v err %v view %+v", created, err, done)
	}
	h.restart()
	if done, created, err = h.s.Register(context.Background(), req); err != nil || created || done.Task.Id != first.Task.Id {
		t.Fatalf("after a restart: created %v err %v view %+v", created, err, done)
	}
}

// An idempotency key is forgotten after its retention, and the oldest
// keys beyond the count bound go first.
func TestIdempotencyKeysExpire(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.IdempotencyRetention = time.Hour
		c.MaxIdempotencyKeys = 2 * store.DefaultShards // two per shard
	})
	reg := func(key string) (TaskView, bool) {
		v, created, err := h.s.Register(context.Background(), RegisterRequest{Client: "acme", Delay: 10 * 24 * time.Hour, IdempotencyKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return v, created
	}
	first, _ := reg("k")
	h.advance(59 * time.Minute)
	if v, created := reg("k"); created || v.Task.Id != first.Task.Id {
		t.Fatalf("within retention: created %v", created)
	}
	h.advance(2 * time.Minute) // past retention, and the next sweep
	if v, created := reg("k"); !created || v.Task.Id == first.Task.Id {
		t.Fatalf("after retention: created %v, id %d (first %d)", created, v.Task.Id, first.Task.Id)
	}
	// Keys on one shard beyond its share: the oldest is forgotten first.
	keys := sameShardKeys(h.st, "acme", 3)
	var ids []uint64
	for _, k := range keys {
		v, _ := reg(k)
		ids = append(ids, v.Task.Id)
		h.advance(time.Millisecond)
	}
	h.clock.Advance(DefaultSweep)
	h.settle()
	if _, created := reg(keys[0]); !created {
		t.Fatal("the oldest key beyond the bound was kept")
	}
	if v, created := reg(keys[2]); created || v.Task.Id != ids[2] {
		t.Fatal("the newest key was forgotten")
	}
}

// sameShardKeys returns n idempotency keys of client that live on one
// shard.
func sameShardKeys(st *store.Store, client string, n int) []string {
	byShard := map[uint16][]string{}
	for i := 0; ; i++ {
		k := fmt.Sprint("key-", i)
		sh := st.GroupShard(client, "\x00"+k)
		if byShard[sh] = append(byShard[sh], k); len(byShard[sh]) == n {
			return byShard[sh]
		}
	}
}

// Concurrent repeats of one key, all in the journal together, get one
// task.
func TestIdempotencyKeyUnderConcurrentRepeats(t *testing.T) {
	h := newHarness(t, nil)
	ids := make(chan uint64, 32)
	for range cap(ids) {
		go func() {
			v, _, err := h.s.Register(context.Background(), RegisterRequest{Client: "acme", Delay: time.Hour, IdempotencyKey: "k"})
			if err != nil {
				t.Error(err)
			}
			ids <- v.Task.GetId()
		}()
	}
	first := <-ids
	for range cap(ids) - 1 {
		if id := <-ids; id != first {
			t.Fatalf("repeats got tasks %d and %d", first, id)
		}
	}
}

func TestOtherClientsTasksAreNotFound(t *testing.T) {
	h := newHarness(t, nil)
	v := h.register(RegisterRequest{Client: "acme", Delay: time.Hour})
	mallory := Caller{Client: "mallory"}
	if _, err := h.s.Get(context.Background(), mallory, v.Task.Id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if err := h.s.Cancel(context.Background(), mallory, v.Task.Id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Cancel: %v", err)
	}
	if _, err := h.s.Get(context.Background(), Caller{Admin: true}, v.Task.Id); err != nil {
		t.Fatalf("admin Get: %v", err)
	}
}

func TestInvalidRequestsNameTheField(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPayload = 8 })
	for _, tc := range []struct {
		req   RegisterRequest
		field string
	}{
		{RegisterRequest{}, "client"},
		{RegisterRequest{Client: "a\x00b"}, "client"},
		{RegisterRequest{Client: "c", Payload: make([]byte, 9)}, "payload"},
		{RegisterRequest{Client: "c", Delay: -time.Second}, "delay"},
		{RegisterRequest{Client: "c", Delay: time.Second, At: epoch}, "delay"},
		{RegisterRequest{Client: "c", Interval: -time.Second}, "interval"},
		{RegisterRequest{Client: "c", Interval: time.Microsecond}, "interval"},
		{RegisterRequest{Client: "c", Mode: 42}, "mode"},
		{RegisterRequest{Client: "c", Retry: &storepb.RetryPolicy{Jitter: 2}}, "retry.jitter"},
		{RegisterRequest{Client: "c", Group: "\xff"}, "group"},
		{RegisterRequest{Client: "c", IdempotencyKey: "\xc3"}, "idempotency_key"},
		{RegisterRequest{Client: "c", Group: "\xff", Cron: "\xff", ReplaceKey: "\xff"}, "group"}, // the first of several
	} {
		_, _, err := h.s.Register(context.Background(), tc.req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("Register(%+v) = %v, want a FieldError for %q", tc.req, err, tc.field)
		}
	}
	// None of them may have stopped the scheduler.
	h.register(RegisterRequest{Payload: payload("ok"), Delay: time.Hour})
}

// Every change is durable before it takes effect: registrations and
// cancels before they are acknowledged, delivery outcomes, retries and
// dead-lettering before the group's next task may start. The power is
// cut after each step; what the step made visible must survive it.
func TestEveryChangeIsDurable(t *testing.T) {
	tune := func(c *Config) { c.Retry = FixedRetry{Attempts: 2, Delay: time.Second} }
	h := newPowerHarness(t, tune)
	get := func(id uint64) error {
		_, err := h.s.Get(context.Background(), Caller{Client: "acme"}, id)
		return err
	}
	ok := h.register(RegisterRequest{Payload: payload("ok"), Group: "g"})
	bad := h.register(RegisterRequest{Payload: payload("bad"), Group: "g"})
	gone := h.register(RegisterRequest{Payload: payload("gone"), Delay: time.Hour})
	if err := h.s.Cancel(context.Background(), Caller{Client: "acme"}, gone.Task.Id); err != nil {
		t.Fatal(err)
	}
	h.powerLoss()
	if get(ok.Task.Id) != nil || get(bad.Task.Id) != nil || !errors.Is(get(gone.Task.Id), ErrNotFound) {
		t.Fatal("a registration or a cancel did not survive the power loss")
	}

	a := h.expect("ok", 1)
	a.done(nil)
	h.expect("bad", 1) // the group moved on: the outcome must be durable
	h.powerLoss()
	if !errors.Is(get(ok.Task.Id), ErrNotFound) {
		t.Fatal("the acknowledged task came back after the power loss")
	}

	h.fail(h.expect("bad", 1), errRefused)
	h.powerLoss()
	if v, err := h.s.Get(context.Background(), Caller{Client: "acme"}, bad.Task.Id); err != nil || v.Task.Attempts != 1 {
		t.Fatalf("the retry did not survive the power loss: %+v, %v", v.Task, err)
	}

	h.advance(time.Second)
	h.fail(h.expect("bad", 2), errRefused)
	h.powerLoss()
	if !errors.Is(get(bad.Task.Id), ErrNotFound) {
		t.Fatal("the dead-lettered task came back after the power loss")
	}
	if dls, _, err := h.s.DeadLetters(context.Background(), Caller{Client: "acme"}, "acme", 0, 10); err != nil || len(dls) != 1 {
		t.Fatalf("dead letters after the power loss: %d, %v", len(dls), err)
	}
}

// OnFinished hears of each final outcome once it is durable: a delivery,
// and a dead letter with its id and error.
func TestOnFinishedReportsFinalOutcomes(t *testing.T) {
	got := make(chan Finished, 4)
	h := newHarness(t, func(c *Config) {
		c.Retry = FixedRetry{Attempts: 1}
		c.OnFinished = func(f Finished) { got <- f }
	})
	ok := h.register(RegisterRequest{Payload: payload("ok")})
	h.ack(h.expect("ok", 1))
	if f := <-got; !f.Delivered || f.Task.Id != ok.Task.Id || f.DeadLetter != 0 {
		t.Fatalf("OnFinished for a delivery: %+v", f)
	}
	bad := h.register(RegisterRequest{Payload: payload("bad")})
	h.fail(h.expect("bad", 1), errRefused)
	f := <-got
	if f.Delivered || f.Task.Id != bad.Task.Id || f.DeadLetter == 0 || f.Error != errRefused.Error() {
		t.Fatalf("OnFinished for a dead letter: %+v", f)
	}
	if _, err := h.s.DeadLetter(context.Background(), Caller{Admin: true}, f.DeadLetter); err != nil {
		t.Fatalf("the reported dead letter: %v", err)
	}
}

// An id naming a shard the store does not have names no task.
func TestIDOutsideTheShardsIsNotFound(t *testing.T) {
	h := newHarness(t, nil)
	id := uint64(1) << 60
	if _, err := h.s.Get(context.Background(), Caller{Client: "acme"}, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
	if err := h.s.Cancel(context.Background(), Caller{Client: "acme"}, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Cancel: %v, want ErrNotFound", err)
	}
}

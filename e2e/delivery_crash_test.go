package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// SIGKILL of the real server while deliveries and retries are under way,
// round after round on one data directory, with one webhook receiver
// living across every round. The receiver fails the first attempt of the
// tasks whose payload marks them, so retries are pending at kill time, and
// each round dies at a random point of one of three kinds: inside the
// receiver just before it answers 2xx (the acknowledgement is lost), just
// as it answers 5xx (a retry is being scheduled), or after a number of
// registrations. After the last round a server drains everything; then
// the whole delivery history is checked:
//   - every acknowledged registration was delivered with a 2xx answer;
//   - after a 2xx answer, the same server process never delivers the task
//     again: duplicates only come from a crash;
//   - within a group, a task is attempted only after every earlier task
//     of its group was answered 2xx (NEXT_ON_ERROR: a retrying head holds
//     its group), and one server process never goes back to an earlier
//     task of the group;
//   - a BLOCK_ON_ERROR group whose head always fails is blocked from the
//     first round to the last: its head is the only dead letter, the group
//     says blocked after every restart, and nothing behind it is delivered.
//
// The receiver tells server processes apart by connection: each
// connection it accepts is tagged with the round whose server opened it.
// Between rounds, with the old server dead and the next not started, the
// tag moves on only after every connection queued for accepting is
// accepted, so a request the dead server sent just before dying is not
// counted as the next server's.
func TestCrashWhileDelivering(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	dataDir := newDataDir(t)
	h := newCrashHistory()
	rcv := newCrashReceiver(t, h)
	workers := crashWorkers()
	const rounds = 5
	kindOffset := rng.IntN(numKillKinds) // every kind of kill in 5 rounds
	var poisonDeadLetter uint64
	var fired []killKind
	for round := range rounds + 1 {
		if round > 0 {
			rcv.advance(t, round)
		}
		s := startServer(t, dataDir)
		if round == 0 {
			secret := registerCrashClient(t, s.admin(t), rcv.url())
			rcv.start(t, secret)
		}
		c := s.dial(t, crashClient, crashClient+"-password", client.WithReconnectBackoff(time.Second, time.Second))
		if round == 0 {
			poisonDeadLetter = blockGroup(t, c, h)
		}
		checkBlocked(t, c, poisonDeadLetter, round)
		if round == rounds {
			drainDeliveries(t, c, h)
			checkBlocked(t, c, poisonDeadLetter, round)
			checkDeadLetters(t, c, poisonDeadLetter)
			checkBlockedTasksKept(t, c, h)
			break
		}
		ks := newKillSwitch(killKind((round+kindOffset)%numKillKinds), round, rng, s)
		h.arm(ks)
		regs := runCrashLoad(t, s, c, h, workers, ks, seed, round)
		h.arm(nil)
		c.Close()
		by := killKind(ks.firedBy.Load())
		fired = append(fired, by)
		t.Logf("round %d: killed %s (trigger at %d) after %d registrations", round, by, ks.after, regs)
	}
	h.check(t, slices.Contains(fired, killOnAck))
}

const (
	crashClient   = "crasher"
	poisonedGroup = "blk"
	ungrouped     = "-"
	// Flags at the end of a payload.
	flagPlain  = "."
	flagMarked = "m" // the receiver fails attempt 1
	flagPoison = "p" // the receiver fails every attempt
)

// registerCrashClient registers the test's client with a webhook to url,
// NEXT_ON_ERROR by default, short backoff and attempts enough that no
// task but the poison one is ever dead-lettered. It returns the signing
// secret.
func registerCrashClient(t *testing.T, admin *client.Client, url string) []byte {
	t.Helper()
	resp, err := admin.RegisterClient(testContext(t), &boomerangv1.RegisterClientRequest{
		ClientId: crashClient, Password: crashClient + "-password",
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: url, TimeoutMs: 10_000},
		Retry: &boomerangv1.RetryPolicy{
			Backoff: boomerangv1.Backoff_BACKOFF_EXPONENTIAL, InitialIntervalMs: 3, MaxIntervalMs: 20,
			Multiplier: 2, Jitter: 0.2, MaxAttempts: 25,
		},
		DefaultMode: boomerangv1.DispatchMode_DISPATCH_MODE_NEXT_ON_ERROR,
	})
	if err != nil {
		t.Fatalf("RegisterClient: %v", err)
	}
	return resp.GetSigningSecret()
}

// blockGroup registers the poison head of the blocked group, waits until
// it is dead-lettered and blocks its group, and returns its dead letter.
func blockGroup(t *testing.T, c *client.Client, h *crashHistory) uint64 {
	t.Helper()
	ctx := testContext(t)
	payload := crashPayload(poisonedGroup, 0, flagPoison)
	task, err := c.Schedule(ctx, []byte(payload), client.InGroup(poisonedGroup),
		client.WithMode(boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR),
		client.WithRetry(&boomerangv1.RetryPolicy{MaxAttempts: 2}))
	if err != nil {
		t.Fatal(err)
	}
	h.registered(payload, task.GetId(), poisonedGroup, 0)
	waitFor(t, "the poison head to block its group", func() bool {
		g, err := c.GetGroup(ctx, &boomerangv1.GetGroupRequest{Group: poisonedGroup})
		return err == nil && g.GetGroup().GetBlocked()
	})
	return awaitDeadLetter(t, c, payload).GetId()
}

// checkBlocked verifies, right after a (re)start, that the blocked group
// is still blocked on the poison head's dead letter.
func checkBlocked(t *testing.T, c *client.Client, deadLetter uint64, round int) {
	t.Helper()
	g, err := c.GetGroup(testContext(t), &boomerangv1.GetGroupRequest{Group: poisonedGroup})
	if err != nil {
		t.Fatalf("round %d: GetGroup(%s): %v", round, poisonedGroup, err)
	}
	if !g.GetGroup().GetBlocked() || g.GetGroup().GetBlockedDeadLetterId() != deadLetter {
		t.Fatalf("round %d: group %s = %v, want blocked on dead letter %d", round, poisonedGroup, g.GetGroup(), deadLetter)
	}
}

// checkDeadLetters verifies that the poison head is the only dead letter:
// no other task ran out of attempts.
func checkDeadLetters(t *testing.T, c *client.Client, poison uint64) {
	t.Helper()
	var all []*boomerangv1.DeadLetter
	for d, err := range c.DeadLetters(testContext(t), &boomerangv1.ListDeadLettersRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, d)
	}
	if len(all) != 1 {
		t.Fatalf("%d dead letters, want only the poison head's: %v", len(all), all)
	}
	d := all[0]
	if d.GetId() != poison || !d.GetBlocksGroup() || d.GetAttempts() != 2 || d.GetTask().GetGroup() != poisonedGroup {
		t.Fatalf("dead letter %v, want %d blocking %s after 2 attempts", d, poison, poisonedGroup)
	}
}

// checkBlockedTasksKept verifies that every acknowledged registration of
// the blocked group is still stored, waiting behind its head.
func checkBlockedTasksKept(t *testing.T, c *client.Client, h *crashHistory) {
	t.Helper()
	stored := map[uint64]bool{}
	for task, err := range c.Tasks(testContext(t), &boomerangv1.ListTasksRequest{Group: poisonedGroup, PageSize: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		stored[task.GetId()] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	behind := 0
	for key, task := range h.tasks {
		if task.group != poisonedGroup || task.seq == 0 {
			continue
		}
		behind++
		if !stored[task.id] {
			t.Errorf("task %d (%s) of the blocked group is gone", task.id, key)
		}
	}
	if behind == 0 {
		t.Fatal("no task was registered behind the blocked head")
	}
}

// drainDeliveries waits until every acknowledged registration outside the
// blocked group was answered 2xx, and then until the server holds nothing
// but the blocked group's tasks (deliveries of registrations whose
// acknowledgement the kill lost included).
func drainDeliveries(t *testing.T, c *client.Client, h *crashHistory) {
	t.Helper()
	ctx := testContext(t)
	var missing []string
	pollUntil(t, func() bool {
		missing = h.undelivered()
		return len(missing) == 0
	}, func() string {
		var sample []string
		for _, key := range missing[:min(5, len(missing))] {
			id := h.taskID(key)
			got, err := c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: id})
			sample = append(sample, fmt.Sprintf("%s (task %d): %v %v", key, id, got.GetTask(), err))
		}
		return fmt.Sprintf("%d acknowledged tasks never delivered, e.g.\n%s", len(missing), strings.Join(sample, "\n"))
	})
	var left []*boomerangv1.Task
	pollUntil(t, func() bool {
		left = left[:0]
		for task, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{PageSize: 1000}) {
			if err != nil {
				t.Fatal(err)
			}
			if task.GetGroup() != poisonedGroup {
				left = append(left, task)
			}
		}
		return len(left) == 0
	}, func() string {
		return fmt.Sprintf("%d tasks outside the blocked group left, e.g. %v", len(left), left[:min(5, len(left))])
	})
}

// pollUntil polls cond until it holds, failing the test with what
// explain says after waitLimit.
func pollUntil(t *testing.T, cond func() bool, explain func() string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal(explain())
		}
	}
}

// crashWorker registers tasks of one group (or ungrouped) one after the
// other, each due the same time after its registration, so that its
// registration order is its group's due order.
type crashWorker struct {
	group string // "" for ungrouped
	next  int    // sequence of the next registration; never reused
	opts  []client.ScheduleOption
}

func crashWorkers() []*crashWorker {
	var ws []*crashWorker
	// Some groups fire at once; others are due a little later, so that a
	// kill leaves several of their tasks waiting, which the restarted
	// server fires together and must still deliver in order.
	delays := []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond}
	for g := range 20 {
		name := fmt.Sprintf("g%02d", g)
		ws = append(ws, &crashWorker{group: name, opts: []client.ScheduleOption{client.InGroup(name), client.After(delays[g%len(delays)])}})
	}
	ws = append(ws, &crashWorker{},
		&crashWorker{group: poisonedGroup, next: 1, opts: []client.ScheduleOption{client.InGroup(poisonedGroup),
			client.WithMode(boomerangv1.DispatchMode_DISPATCH_MODE_BLOCK_ON_ERROR)}})
	return ws
}

func (w *crashWorker) label() string {
	if w.group == "" {
		return ungrouped
	}
	return w.group
}

// run registers until the server dies, with a pause of 0–50 ms after each
// acknowledgement. A registration under way at the kill has no known
// outcome: it may be durable, and then it is delivered later.
func (w *crashWorker) run(ctx context.Context, t *testing.T, c *client.Client, h *crashHistory, rng *rand.Rand, registered func()) {
	for {
		seq := w.next
		w.next++
		flag := flagPlain
		if w.group != poisonedGroup && rng.IntN(4) == 0 {
			flag = flagMarked
		}
		payload := crashPayload(w.label(), seq, flag)
		task, err := c.Schedule(ctx, []byte(payload), w.opts...)
		if err != nil {
			if !errors.Is(err, client.ErrConnectionLost) && !errors.Is(err, client.ErrClosed) && ctx.Err() == nil {
				t.Errorf("registration failed other than by the crash: %v", err)
			}
			return
		}
		h.registered(payload, task.GetId(), w.label(), seq)
		registered()
		pause := time.NewTimer(time.Duration(rng.Int64N(int64(50 * time.Millisecond))))
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return
		}
	}
}

// runCrashLoad runs every worker against s until the kill switch kills it
// and returns the number of acknowledged registrations.
func runCrashLoad(t *testing.T, s *server, c *client.Client, h *crashHistory, workers []*crashWorker, ks *killSwitch, seed uint64, round int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	go func() {
		select {
		case <-s.exited:
			cancel() // calls waiting for a reconnection end now
		case <-ctx.Done():
		}
	}()
	var regs atomic.Int64
	var wg sync.WaitGroup
	for i, w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(round*len(workers)+i)))
		wg.Go(func() {
			w.run(ctx, t, c, h, rng, func() { ks.registration(regs.Add(1)) })
		})
	}
	wg.Wait()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		ks.fire(killByDeadline)
		t.Fatalf("round %d: the load ran %v without the kill switch (%s after %d) firing", round, waitLimit, ks.kind, ks.after)
	}
	<-s.exited
	return regs.Load()
}

// killKind is what makes a round's server die.
type killKind int

const (
	killOnAck      killKind = iota // inside the receiver, before its 2xx answer
	killOnFail                     // as the receiver answers 5xx
	killOnRegister                 // after a number of acknowledged registrations
	killByCap                      // the round registered maxRoundRegistrations
	killByDeadline                 // the round ran waitLimit
)

// numKillKinds is the number of kinds a round picks from.
const numKillKinds = 3

func (k killKind) String() string {
	switch k {
	case killOnAck:
		return "before a 2xx answer"
	case killOnFail:
		return "at a 5xx answer"
	case killOnRegister:
		return "after registrations"
	case killByCap:
		return "at the registration cap"
	default:
		return "at the deadline"
	}
}

// maxRoundRegistrations ends a round whose kill switch has not fired, so
// every round is bounded.
const maxRoundRegistrations = 1500

// killSwitch kills one round's server once, at the after-th event of its
// kind.
type killSwitch struct {
	kind    killKind
	epoch   int
	after   int
	count   int // events of kind seen; guarded by crashHistory.mu
	once    sync.Once
	s       *server
	firedBy atomic.Int64 // the killKind that fired
}

func newKillSwitch(kind killKind, epoch int, rng *rand.Rand, s *server) *killSwitch {
	after := 150 + rng.IntN(600)
	if kind == killOnFail {
		after = 40 + rng.IntN(150) // about one attempt in four fails
	}
	return &killSwitch{kind: kind, epoch: epoch, after: after, s: s}
}

// fire kills the server (once) and returns when it is gone.
func (ks *killSwitch) fire(by killKind) {
	ks.once.Do(func() {
		ks.firedBy.Store(int64(by))
		ks.s.kill()
	})
}

func (ks *killSwitch) registration(n int64) {
	switch {
	case ks.kind == killOnRegister && n == int64(ks.after):
		go ks.fire(killOnRegister)
	case n == maxRoundRegistrations:
		go ks.fire(killByCap)
	}
}

// crashTask is an acknowledged registration.
type crashTask struct {
	id    uint64
	group string
	seq   int
}

// crashAttempt is one delivery attempt the receiver saw.
type crashAttempt struct {
	key     string // the payload, which names one registration
	taskID  uint64
	group   string // from the payload
	header  string // the delivery's group
	seq     int
	attempt uint32
	epoch   int  // the round whose server sent it
	acked   bool // answered 2xx
}

// crashHistory records the acknowledged registrations and every delivery
// attempt, in the order the receiver saw them.
type crashHistory struct {
	mu       sync.Mutex
	tasks    map[string]crashTask // acknowledged registrations by payload
	attempts []crashAttempt
	acks     map[string]int // 2xx answers by payload
	bad      []string       // deliveries the receiver could not read
	kill     *killSwitch
}

func newCrashHistory() *crashHistory {
	return &crashHistory{tasks: map[string]crashTask{}, acks: map[string]int{}}
}

func (h *crashHistory) arm(ks *killSwitch) {
	h.mu.Lock()
	h.kill = ks
	h.mu.Unlock()
}

func (h *crashHistory) registered(payload string, id uint64, group string, seq int) {
	h.mu.Lock()
	h.tasks[payload] = crashTask{id: id, group: group, seq: seq}
	h.mu.Unlock()
}

func (h *crashHistory) taskID(key string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tasks[key].id
}

// undelivered returns the acknowledged registrations outside the blocked
// group that were never answered 2xx.
func (h *crashHistory) undelivered() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var missing []string
	for key, task := range h.tasks {
		if task.group != poisonedGroup && h.acks[key] == 0 {
			missing = append(missing, key)
		}
	}
	return missing
}

type epochKey struct{}

// handle is the receiver's handler: it records the attempt, fails it when
// its payload says so, and fires the round's kill switch at its event.
func (h *crashHistory) handle(ctx context.Context, d *boomerangv1.Delivery) error {
	epoch, _ := ctx.Value(epochKey{}).(int)
	key := string(d.GetPayload())
	group, seq, flag, ok := parseCrashPayload(key)
	fail := flag == flagPoison || (flag == flagMarked && d.GetAttempt() == 1)
	a := crashAttempt{key: key, taskID: d.GetTaskId(), group: group, header: d.GetGroup(), seq: seq,
		attempt: d.GetAttempt(), epoch: epoch, acked: !fail}
	h.mu.Lock()
	if !ok {
		h.bad = append(h.bad, fmt.Sprintf("task %d: payload %q", d.GetTaskId(), key))
		h.mu.Unlock()
		return errors.New("unreadable payload")
	}
	h.attempts = append(h.attempts, a)
	if a.acked {
		h.acks[key]++
	}
	ks := h.kill
	trigger := false
	if ks != nil && ks.epoch == epoch && (ks.kind == killOnAck && a.acked || ks.kind == killOnFail && !a.acked) {
		ks.count++
		trigger = ks.count == ks.after
	}
	h.mu.Unlock()
	switch {
	case trigger && a.acked:
		ks.fire(killOnAck) // the 2xx answer goes to a dead server
	case trigger:
		go ks.fire(killOnFail) // races the 5xx answer and the retry it schedules
	}
	if fail {
		return fmt.Errorf("receiver fails attempt %d of %s", d.GetAttempt(), key)
	}
	return nil
}

// check verifies the whole history; see TestCrashWhileDelivering.
func (h *crashHistory) check(t *testing.T, ackLostInCrash bool) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	const shown = 20
	violations := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if violations++; violations <= shown {
			t.Errorf(format, args...)
		}
	}
	defer func() {
		if violations > shown {
			t.Errorf("... %d violations in all", violations)
		}
	}()
	for _, b := range h.bad {
		fail("unreadable delivery: %s", b)
	}
	// Which tasks exist: acknowledged, or delivered though the kill lost
	// their acknowledgement.
	known := map[string][]int{} // group → sequences
	ids := map[string]uint64{}
	for key, task := range h.tasks {
		known[task.group] = append(known[task.group], task.seq)
		ids[key] = task.id
	}
	for _, a := range h.attempts {
		if id, ok := ids[a.key]; ok && id != a.taskID {
			t.Fatalf("%s delivered as task %d and as task %d", a.key, id, a.taskID)
		}
		if _, ok := ids[a.key]; !ok {
			ids[a.key] = a.taskID
			known[a.group] = append(known[a.group], a.seq)
		}
		if a.header != a.group && !(a.group == ungrouped && a.header == "") {
			fail("task %d of group %q delivered with group %q", a.taskID, a.group, a.header)
		}
	}
	for _, seqs := range known {
		slices.Sort(seqs)
	}

	// 1. Every acknowledged registration was answered 2xx.
	for key, task := range h.tasks {
		if task.group != poisonedGroup && h.acks[key] == 0 {
			fail("task %d (%s) acknowledged but never delivered", task.id, key)
		}
	}

	// 2. No attempt after a 2xx answer from the same server process.
	ackedIn := map[string]map[int]bool{} // payload → epochs that acked it
	duplicates := 0
	for i, a := range h.attempts {
		if ackedIn[a.key][a.epoch] {
			fail("attempt %d: task %d (%s) delivered again (attempt %d) by the server of round %d after that server got a 2xx",
				i, a.taskID, a.key, a.attempt, a.epoch)
		}
		if !a.acked {
			continue
		}
		if len(ackedIn[a.key]) > 0 {
			duplicates++
		}
		if ackedIn[a.key] == nil {
			ackedIn[a.key] = map[int]bool{}
		}
		ackedIn[a.key][a.epoch] = true
	}

	// 3. Group order. A task is attempted only after every earlier task of
	// its group was answered 2xx (NEXT_ON_ERROR: a retrying head holds its
	// group; none of these tasks is dead-lettered), so first deliveries go
	// in registration order. One server process never goes back to an
	// earlier task of a group: once a later one started, the earlier one's
	// success is decided. Across a crash it may: the server records
	// delivery outcomes without an fsync (docs/callbacks.md), so the kill
	// can lose the last successes, and the next server delivers those
	// tasks again, in order, before going on.
	type groupState struct {
		through int          // index into known[group]: every sequence before it was acked
		acked   map[int]bool // sequences answered 2xx so far
		last    map[int]int  // epoch → highest sequence that server attempted
		lastAt  map[int]int  // epoch → index of that attempt
		highest int          // highest sequence attempted by any server
	}
	groups := map[string]*groupState{}
	wentBack := 0
	for i, a := range h.attempts {
		if a.group == ungrouped {
			continue
		}
		if a.group == poisonedGroup {
			// 4. Nothing behind the blocked head is delivered.
			if a.seq != 0 {
				fail("attempt %d: task %d (%s) of the blocked group delivered", i, a.taskID, a.key)
			}
			continue
		}
		g := groups[a.group]
		if g == nil {
			g = &groupState{acked: map[int]bool{}, last: map[int]int{}, lastAt: map[int]int{}, highest: -1}
			groups[a.group] = g
		}
		if last, ok := g.last[a.epoch]; ok && a.seq < last {
			fail("attempt %d: the server of round %d went back in group %s to task %d (seq %d) after attempt %d of seq %d",
				i, a.epoch, a.group, a.taskID, a.seq, g.lastAt[a.epoch], last)
		}
		if a.seq < g.highest {
			wentBack++
		}
		seqs := known[a.group]
		for g.through < len(seqs) && seqs[g.through] < a.seq {
			if !g.acked[seqs[g.through]] {
				fail("attempt %d: group %s delivered seq %d (task %d) before seq %d was answered 2xx",
					i, a.group, a.seq, a.taskID, seqs[g.through])
			}
			g.through++
		}
		if last, ok := g.last[a.epoch]; !ok || a.seq >= last {
			g.last[a.epoch], g.lastAt[a.epoch] = a.seq, i
		}
		g.highest = max(g.highest, a.seq)
		if a.acked {
			g.acked[a.seq] = true
		}
	}

	// The history must have exercised what it checks.
	failed := 0
	for _, a := range h.attempts {
		if !a.acked {
			failed++
		}
	}
	t.Logf("history: %d registrations acknowledged, %d tasks delivered, %d attempts (%d failed), %d duplicates after a crash, %d attempts of an earlier task of a group after a crash",
		len(h.tasks), len(ackedIn), len(h.attempts), failed, duplicates, wentBack)
	if len(h.tasks) < 500 || failed < 100 {
		fail("history too small to mean much: %d registrations, %d failed attempts", len(h.tasks), failed)
	}
	if ackLostInCrash && duplicates == 0 {
		t.Error("a server died before getting a 2xx answer, yet nothing was delivered twice")
	}
}

func crashPayload(group string, seq int, flag string) string {
	return group + " " + strconv.Itoa(seq) + " " + flag
}

func parseCrashPayload(p string) (group string, seq int, flag string, ok bool) {
	f := strings.Fields(p)
	if len(f) != 3 {
		return "", 0, "", false
	}
	seq, err := strconv.Atoi(f[1])
	return f[0], seq, f[2], err == nil
}

// crashReceiver is the webhook endpoint, one for every round: an
// httptest server whose connections carry the round whose server opened
// them.
type crashReceiver struct {
	srv *httptest.Server
	ln  *epochListener
	h   *crashHistory
}

func newCrashReceiver(t *testing.T, h *crashHistory) *crashReceiver {
	srv := httptest.NewUnstartedServer(nil)
	ln := &epochListener{Listener: srv.Listener, accepted: map[string]bool{}}
	srv.Listener = ln
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, epochKey{}, c.(*epochConn).epoch)
	}
	t.Cleanup(srv.Close)
	return &crashReceiver{srv: srv, ln: ln, h: h}
}

// advance tags the connections accepted from now on with epoch, once
// every connection already waiting to be accepted (those the dead server
// opened) was accepted and tagged with the previous one: it queues a
// connection of its own behind them and waits for its turn.
func (r *crashReceiver) advance(t *testing.T, epoch int) {
	t.Helper()
	r.ln.mu.Lock()
	clear(r.ln.accepted) // a port the marker reuses must not count
	r.ln.mu.Unlock()
	marker, err := net.Dial("tcp", r.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	waitFor(t, "the receiver to accept every connection of the killed server", func() bool {
		return r.ln.wasAccepted(marker.LocalAddr().String())
	})
	r.ln.epoch.Store(int32(epoch))
}

// epochListener tags each connection it accepts with the current epoch.
type epochListener struct {
	net.Listener
	epoch    atomic.Int32
	mu       sync.Mutex
	accepted map[string]bool // remote addresses since the last advance
}

type epochConn struct {
	net.Conn
	epoch int
}

func (l *epochListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.accepted[c.RemoteAddr().String()] = true
	l.mu.Unlock()
	return &epochConn{Conn: c, epoch: int(l.epoch.Load())}, nil
}

func (l *epochListener) wasAccepted(remote string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted[remote]
}

func (r *crashReceiver) url() string { return "http://" + r.ln.Addr().String() + "/hook" }

// start serves with the client package's receiver, which checks every
// delivery's signature against secret.
func (r *crashReceiver) start(t *testing.T, secret []byte) {
	t.Helper()
	recv, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: secret, Handler: r.h.handle})
	if err != nil {
		t.Fatal(err)
	}
	r.srv.Config.Handler = recv
	r.srv.Start()
}

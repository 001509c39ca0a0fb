package delivery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/boomerangd/boomerang/internal/activemqtest"
	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// next is the subscription's next message, failing at waitLimit.
func next(t *testing.T, sub *stomp.Subscription) *stomp.Message {
	t.Helper()
	return activemqtest.Next(t, sub, waitLimit)
}

func activemqCallback(endpoint string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_ACTIVEMQ, Endpoint: endpoint}
}

// TestActiveMQ shares one broker among its cases: starting it takes
// seconds.
func TestActiveMQ(t *testing.T) {
	b := activemqtest.Start(t)

	t.Run("receipted with headers", func(t *testing.T) {
		sub := b.Consumer("/queue/orders.headers")
		e, _ := newEngine(t, activemqCallback(b.URL("/queue/orders.headers")), nil)
		tk := task("order 17")
		tk.Group = "eu 17"
		if err := deliver(e, tk, 3).wait(t); err != nil {
			t.Fatal(err)
		}
		m := next(t, sub)
		if string(m.Body) != "order 17" {
			t.Fatalf("body %q", m.Body)
		}
		for name, want := range map[string]string{
			"persistent":          "true",
			headerMessageID:       fmt.Sprintf("%d-%d", tk.Id, tk.DueMs),
			webhook.HeaderTaskID:  strconv.FormatUint(tk.Id, 10),
			webhook.HeaderAttempt: "3", webhook.HeaderGroup: "eu%2017", webhook.HeaderClient: "acme",
			webhook.HeaderTerm: strconv.FormatUint(testTerm, 10),
		} {
			if got := m.Header.Get(name); got != want {
				t.Errorf("header %s = %q, want %q", name, got, want)
			}
		}
	})

	t.Run("destination per group", func(t *testing.T) {
		sub := b.Consumer("/queue/orders.eu")
		e, _ := newEngine(t, activemqCallback(b.URL("/queue/orders.{group}")), nil)
		tk := task("to eu")
		tk.Group = "eu"
		if err := deliver(e, tk, 1).wait(t); err != nil {
			t.Fatal(err)
		}
		if m := next(t, sub); string(m.Body) != "to eu" {
			t.Fatalf("body %q", m.Body)
		}
	})

	// Two consumers share the queue: JMSXGroupID must keep each group on
	// one of them, in order.
	t.Run("group order seen by consumers", func(t *testing.T) {
		subs := []*stomp.Subscription{b.Consumer("/queue/orders.fifo"), b.Consumer("/queue/orders.fifo")}
		sys := newSystem(t, &storepb.Client{Id: "acme", Callback: activemqCallback(b.URL("/queue/orders.fifo"))})
		const groups, perGroup = 20, 25
		for i := range perGroup {
			for g := range groups {
				sys.register(scheduler.RegisterRequest{Group: "g" + strconv.Itoa(g), Payload: []byte(strconv.Itoa(i))})
			}
		}
		nextOf, consumerOf := map[string]int{}, map[string]int{}
		for range groups * perGroup {
			var m *stomp.Message
			var from int
			select {
			case m = <-subs[0].C:
			case m = <-subs[1].C:
				from = 1
			case <-time.After(waitLimit):
				t.Fatal("no message")
			}
			if m.Err != nil {
				t.Fatal(m.Err)
			}
			g := m.Header.Get(webhook.HeaderGroup)
			if c, seen := consumerOf[g]; seen && c != from {
				t.Fatalf("group %s went to both consumers", g)
			}
			consumerOf[g] = from
			if want := strconv.Itoa(nextOf[g]); string(m.Body) != want {
				t.Fatalf("group %s: got #%s, want #%s: not FIFO", g, m.Body, want)
			}
			nextOf[g]++
		}
		sys.idle()
		if st := sys.s.Stats(); st.Delivered != groups*perGroup || st.Failed != 0 {
			t.Fatalf("scheduler stats %+v", st)
		}
	})

	t.Run("a refused queue goes to retries, then the dead letters", func(t *testing.T) {
		sys := newSystem(t,
			&storepb.Client{Id: "acme", Callback: activemqCallback(b.URL("/queue/forbidden"))},
			&storepb.Client{Id: "wrongpass", Callback: activemqCallback(strings.Replace(b.URL("/queue/orders.x"), activemqtest.Password, "nope", 1))},
		)
		sys.register(scheduler.RegisterRequest{Payload: []byte("x")})
		sys.register(scheduler.RegisterRequest{Client: "wrongpass", Payload: []byte("y")})
		for _, dl := range sys.deadLetters(2) {
			want := "not authorized to write"
			if dl.Task.Client == "wrongpass" {
				want = "refused the connection"
			}
			if dl.Attempts != fastRetry.MaxAttempts || !strings.Contains(dl.LastError, want) || strings.Contains(dl.LastError, "\tat ") {
				t.Errorf("%s: dead letter after %d attempts: %q, want %d attempts and %q", dl.Task.Client, dl.Attempts, dl.LastError, fastRetry.MaxAttempts, want)
			}
		}
	})

	t.Run("broker down", func(t *testing.T) {
		closed := fmt.Sprintf("activemq://127.0.0.1:%d/queue/orders", freePort(t))
		e, _ := newEngine(t, activemqCallback(closed), nil)
		err := deliver(e, task("x"), 1).wait(t)
		if !errors.Is(err, ErrUnreachable) || IsPermanent(err) {
			t.Fatalf("err = %v, want ErrUnreachable, retryable", err)
		}
	})
}

// A broker killed mid-run and started again loses no task it
// acknowledged: every task reaches the queue at least once, each group in
// order once re-sends are dropped by their message id.
func TestActiveMQBrokerKilledAndRestarted(t *testing.T) {
	b := activemqtest.Start(t)
	sys := newSystem(t, &storepb.Client{Id: "acme", Callback: activemqCallback(b.URL("/queue/orders.restart")),
		Retry: &storepb.RetryPolicy{Backoff: storepb.BackoffKind_BACKOFF_KIND_FIXED, InitialIntervalMs: 50, MaxAttempts: 1000}})
	const groups, perGroup = 10, 30
	register := func(from, to int) {
		for i := from; i < to; i++ {
			for g := range groups {
				sys.register(scheduler.RegisterRequest{Group: "g" + strconv.Itoa(g), Payload: []byte(strconv.Itoa(i))})
			}
		}
	}
	register(0, perGroup/2)
	eventually(t, "some deliveries", func() bool { return sys.s.Stats().Delivered >= groups })
	b.Kill()
	register(perGroup/2, perGroup)
	b.Restart()
	eventually(t, "every task delivered", func() bool { return sys.s.Stats().Delivered >= groups*perGroup })
	sys.idle()
	if st := sys.s.Stats(); st.Delivered != groups*perGroup || st.DeadLetters != 0 {
		t.Fatalf("scheduler stats %+v", st)
	}
	sub := b.Consumer("/queue/orders.restart")
	seen, nextOf, resent := map[string]bool{}, map[string]int{}, 0
	for len(seen) < groups*perGroup {
		m := next(t, sub)
		id := m.Header.Get(headerMessageID)
		if seen[id] {
			resent++
			continue
		}
		seen[id] = true
		g := m.Header.Get(webhook.HeaderGroup)
		if want := strconv.Itoa(nextOf[g]); string(m.Body) != want {
			t.Fatalf("group %s: got #%s, want #%s: not FIFO", g, m.Body, want)
		}
		nextOf[g]++
	}
	t.Logf("%d tasks, %d re-sent after the restart", len(seen), resent)
}

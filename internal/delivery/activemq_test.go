package delivery

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// activemqJar is Debian's ActiveMQ Classic (package activemq), run
// directly with a configuration the test writes, so that it needs no
// service manager.
const activemqJar = "/usr/share/activemq/bin/activemq.jar"

// The broker's user: it may write to and read orders.* queues, not
// "forbidden".
const (
	activemqUser = "boomerang"
	activemqPass = "s3cret"
)

// activemqConfig is a broker with one STOMP connector on loopback,
// password authentication and per-queue authorization, its store in the
// test's directory. %[1]s is that directory, %[2]d the STOMP port.
const activemqConfig = `<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="boomerang-test" useJmx="false"
          advisorySupport="false" schedulerSupport="false" dataDirectory="%[1]s/data">
    <plugins>
      <simpleAuthenticationPlugin anonymousAccessAllowed="false">
        <users>
          <authenticationUser username="boomerang" password="s3cret" groups="producers"/>
        </users>
      </simpleAuthenticationPlugin>
      <authorizationPlugin>
        <map>
          <authorizationMap>
            <authorizationEntries>
              <authorizationEntry queue="orders.>" read="producers" write="producers" admin="producers"/>
              <authorizationEntry queue="forbidden" read="admins" write="admins" admin="admins"/>
            </authorizationEntries>
          </authorizationMap>
        </map>
      </authorizationPlugin>
    </plugins>
    <persistenceAdapter><kahaDB directory="%[1]s/data/kahadb"/></persistenceAdapter>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:%[2]d"/>
    </transportConnectors>
  </broker>
</beans>
`

// activemqBroker is a throwaway ActiveMQ broker on a free loopback port.
type activemqBroker struct {
	t    testing.TB
	dir  string
	port int
	proc *exec.Cmd
}

// startActiveMQ writes the broker's configuration into a temporary
// directory, starts it there and waits for its STOMP port. It is stopped
// when the test ends.
func startActiveMQ(t testing.TB) *activemqBroker {
	t.Helper()
	if _, err := os.Stat(activemqJar); err != nil {
		t.Fatalf("ActiveMQ is needed (apt-get install activemq; .ci/run does): %v", err)
	}
	b := &activemqBroker{t: t, dir: t.TempDir(), port: freePort(t)}
	if err := os.WriteFile(filepath.Join(b.dir, "activemq.xml"), fmt.Appendf(nil, activemqConfig, b.dir, b.port), 0o600); err != nil {
		t.Fatal(err)
	}
	b.start()
	return b
}

// start runs the broker on its directory and port, as first started.
func (b *activemqBroker) start() {
	b.t.Helper()
	java := exec.Command("java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1",
		"-Dactivemq.home=/usr/share/activemq", "-Dactivemq.base="+b.dir,
		"-Dactivemq.conf="+b.dir, "-Dactivemq.data="+filepath.Join(b.dir, "data"),
		"-jar", activemqJar, "start", "xbean:file:"+filepath.Join(b.dir, "activemq.xml"))
	log := filepath.Join(b.dir, "activemq.out")
	out, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		b.t.Fatal(err)
	}
	java.Stdout, java.Stderr = out, out
	startProcess(b.t, java)
	b.proc = java
	deadline := time.After(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.Dial("tcp", b.addr())
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			logged, _ := os.ReadFile(log)
			b.t.Fatalf("ActiveMQ did not start: %v\n%s", err, logged)
		}
	}
}

// kill stops the broker at once, as a crash would, and waits until the
// process is gone (startProcess reaps it), so that its store's lock is
// free for a restart.
func (b *activemqBroker) kill() {
	pid := b.proc.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	eventually(b.t, "the broker to exit", func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH })
}

func (b *activemqBroker) addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// url is the sink URL of a destination, as the test user.
func (b *activemqBroker) url(dest string) string {
	return fmt.Sprintf("activemq://%s:%s@%s%s", activemqUser, activemqPass, b.addr(), dest)
}

// consumer subscribes to a queue as the test user.
func (b *activemqBroker) consumer(queue string) *stomp.Subscription {
	b.t.Helper()
	c, err := stomp.Dial("tcp", b.addr(), stomp.ConnOpt.Login(activemqUser, activemqPass), stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.Logger(quietLog{}))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = c.MustDisconnect() })
	sub, err := c.Subscribe(queue, stomp.AckAuto)
	if err != nil {
		b.t.Fatal(err)
	}
	return sub
}

// next is the subscription's next message, failing at waitLimit.
func next(t *testing.T, sub *stomp.Subscription) *stomp.Message {
	t.Helper()
	select {
	case m := <-sub.C:
		if m.Err != nil {
			t.Fatal(m.Err)
		}
		return m
	case <-time.After(waitLimit):
		t.Fatal("no message")
		return nil
	}
}

func activemqCallback(endpoint string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_ACTIVEMQ, Endpoint: endpoint}
}

// TestActiveMQ shares one broker among its cases: starting it takes
// seconds.
func TestActiveMQ(t *testing.T) {
	b := startActiveMQ(t)

	t.Run("receipted with headers", func(t *testing.T) {
		sub := b.consumer("/queue/orders.headers")
		e, _ := newEngine(t, activemqCallback(b.url("/queue/orders.headers")), nil)
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
		sub := b.consumer("/queue/orders.eu")
		e, _ := newEngine(t, activemqCallback(b.url("/queue/orders.{group}")), nil)
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
		subs := []*stomp.Subscription{b.consumer("/queue/orders.fifo"), b.consumer("/queue/orders.fifo")}
		sys := newSystem(t, &storepb.Client{Id: "acme", Callback: activemqCallback(b.url("/queue/orders.fifo"))})
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
			&storepb.Client{Id: "acme", Callback: activemqCallback(b.url("/queue/forbidden"))},
			&storepb.Client{Id: "wrongpass", Callback: activemqCallback(strings.Replace(b.url("/queue/orders.x"), activemqPass, "nope", 1))},
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
	b := startActiveMQ(t)
	sys := newSystem(t, &storepb.Client{Id: "acme", Callback: activemqCallback(b.url("/queue/orders.restart")),
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
	b.kill()
	register(perGroup/2, perGroup)
	b.start()
	eventually(t, "every task delivered", func() bool { return sys.s.Stats().Delivered >= groups*perGroup })
	sys.idle()
	if st := sys.s.Stats(); st.Delivered != groups*perGroup || st.DeadLetters != 0 {
		t.Fatalf("scheduler stats %+v", st)
	}
	sub := b.consumer("/queue/orders.restart")
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

// quietLog keeps go-stomp from logging the consumers' ends.
type quietLog struct{}

func (quietLog) Debugf(string, ...any)   {}
func (quietLog) Infof(string, ...any)    {}
func (quietLog) Warningf(string, ...any) {}
func (quietLog) Errorf(string, ...any)   {}
func (quietLog) Debug(string)            {}
func (quietLog) Info(string)             {}
func (quietLog) Warning(string)          {}
func (quietLog) Error(string)            {}

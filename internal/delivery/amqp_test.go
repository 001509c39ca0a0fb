package delivery

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/boomerangd/boomerang/internal/delivery/webhook"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// rabbitBin is Debian's rabbitmq-server (package rabbitmq-server), run
// directly so that it needs no service manager.
const rabbitBin = "/usr/lib/rabbitmq/bin/rabbitmq-server"

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startRabbit runs a throwaway RabbitMQ broker on free loopback ports,
// with its own Erlang port mapper, data in a temporary directory, and
// returns the AMQP URL of its guest user. Both processes are stopped when
// the test ends.
func startRabbit(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(rabbitBin); err != nil {
		t.Fatalf("RabbitMQ is needed (apt-get install rabbitmq-server; .ci/run does): %v", err)
	}
	dir := t.TempDir()
	amqpPort, distPort, epmdPort := freePort(t), freePort(t), freePort(t)
	if err := os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[].\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	epmd := exec.Command("epmd", "-port", strconv.Itoa(epmdPort), "-address", "127.0.0.1")
	startProcess(t, epmd)
	rabbit := exec.Command(rabbitBin)
	rabbit.Env = append(os.Environ(),
		"HOME="+dir,
		"RABBITMQ_NODENAME=boomerang-test@localhost",
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(amqpPort),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(distPort),
		"ERL_EPMD_PORT="+strconv.Itoa(epmdPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "pid"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "none"),
	)
	log := filepath.Join(dir, "rabbitmq.out")
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	rabbit.Stdout, rabbit.Stderr = out, out
	startProcess(t, rabbit)
	url := fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", amqpPort)
	deadline := time.After(time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := amqp.Dial(url)
		if err == nil {
			conn.Close()
			return url
		}
		select {
		case <-tick.C:
		case <-deadline:
			b, _ := os.ReadFile(log)
			t.Fatalf("RabbitMQ did not start: %v\n%s", err, b)
		}
	}
}

// startProcess starts cmd in its own process group and, when the test
// ends, stops the group with SIGTERM (SIGKILL after 30 s).
func startProcess(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
}

func amqpCallback(endpoint string) *storepb.Callback {
	return &storepb.Callback{Protocol: storepb.Protocol_PROTOCOL_AMQP, Endpoint: endpoint}
}

// TestAMQP shares one broker among its cases: starting it takes seconds.
func TestAMQP(t *testing.T) {
	url := startRabbit(t)
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"orders", "eu-orders"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.ExchangeDeclare("events", "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("eu-orders", "orders.eu.#", "events", false, nil); err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, queue string) amqp.Delivery {
		t.Helper()
		m, ok, err := ch.Get(queue, true)
		if err != nil || !ok {
			t.Fatalf("queue %s: ok %v, %v", queue, ok, err)
		}
		return m
	}

	t.Run("confirmed with headers", func(t *testing.T) {
		e, _ := newEngine(t, amqpCallback(url+"?routing_key=orders"), nil)
		tk := task("order 17")
		tk.Group = "eu 17"
		if err := deliver(e, tk, 3).wait(t); err != nil {
			t.Fatal(err)
		}
		m := get(t, "orders")
		if string(m.Body) != "order 17" || m.MessageId != fmt.Sprintf("%d-%d", tk.Id, tk.DueMs) || m.DeliveryMode != amqp.Persistent {
			t.Fatalf("message %q id %q mode %d", m.Body, m.MessageId, m.DeliveryMode)
		}
		for name, want := range map[string]string{
			webhook.HeaderTaskID: strconv.FormatUint(tk.Id, 10), webhook.HeaderAttempt: "3",
			webhook.HeaderGroup: "eu%2017", webhook.HeaderClient: "acme",
			webhook.HeaderTerm: strconv.FormatUint(testTerm, 10),
		} {
			if got := m.Headers[name]; got != want {
				t.Errorf("header %s = %v, want %q", name, got, want)
			}
		}
	})

	t.Run("routing key per group", func(t *testing.T) {
		e, _ := newEngine(t, amqpCallback(url+"?exchange=events&routing_key=orders.{group}"), nil)
		tk := task("to eu")
		tk.Group = "eu.17"
		if err := deliver(e, tk, 1).wait(t); err != nil {
			t.Fatal(err)
		}
		if m := get(t, "eu-orders"); string(m.Body) != "to eu" {
			t.Fatalf("body %q", m.Body)
		}
	})

	t.Run("many at once", func(t *testing.T) {
		e, _ := newEngine(t, amqpCallback(url+"?routing_key=orders"), nil)
		outs := make([]outcome, 200)
		for i := range outs {
			outs[i] = deliver(e, task(strconv.Itoa(i)), 1)
		}
		for _, o := range outs {
			if err := o.wait(t); err != nil {
				t.Fatal(err)
			}
		}
		q, err := ch.QueueDeclarePassive("orders", true, false, false, false, nil)
		if err != nil || q.Messages != len(outs) {
			t.Fatalf("queue holds %d messages (%v), want %d", q.Messages, err, len(outs))
		}
		if _, err := ch.QueuePurge("orders", false); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("failures", func(t *testing.T) {
		closed := fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/?routing_key=orders", freePort(t))
		for _, c := range []struct {
			name, endpoint string
			want           error
		}{
			{"no queue takes it", url + "?exchange=events&routing_key=orders.us.1", ErrRejected},
			{"no such exchange", url + "?exchange=nope&routing_key=x", ErrRejected},
			{"broker down", closed, ErrUnreachable},
		} {
			t.Run(c.name, func(t *testing.T) {
				e, _ := newEngine(t, amqpCallback(c.endpoint), nil)
				err := deliver(e, task("x"), 1).wait(t)
				if !errors.Is(err, c.want) || IsPermanent(err) {
					t.Fatalf("err = %v, want %v, retryable", err, c.want)
				}
			})
		}
	})

	t.Run("a closed channel is opened again", func(t *testing.T) {
		e, _ := newEngine(t, amqpCallback(url+"?exchange=nope&routing_key=x"), nil)
		for range amqpChannels + 1 {
			if err := deliver(e, task("x"), 1).wait(t); !errors.Is(err, ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
		}
		good := task("after")
		good.Callback = amqpCallback(url + "?routing_key=orders")
		for range amqpChannels {
			if err := deliver(e, good, 1).wait(t); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ch.QueuePurge("orders", false); err != nil {
			t.Fatal(err)
		}
	})
}

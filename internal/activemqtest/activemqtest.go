// Package activemqtest runs throwaway ActiveMQ Classic brokers for tests
// and benchmarks: the machine's broker (Debian's activemq package;
// .ci/run installs it) run directly with a configuration written into a
// temporary directory, its store there, one STOMP connector on a free
// loopback port, stopped at the end. It starts in a few seconds.
package activemqtest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"software.sslmate.com/src/go-pkcs12"
)

// Jar is Debian's ActiveMQ (package activemq).
const Jar = "/usr/share/activemq/bin/activemq.jar"

// The broker's one user may read, write and create the queues named
// orders.*, and may not write the queue "forbidden".
const (
	User     = "boomerang"
	Password = "s3cret"
)

// startLimit bounds a start; stopLimit a graceful stop.
const (
	startLimit = time.Minute
	stopLimit  = 30 * time.Second
)

// config is %[1]s the broker's directory, %[2]d its STOMP port, %[3]s
// more broker elements (an sslContext) and %[4]s more connectors.
const config = `<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="boomerang-test" useJmx="false"
          advisorySupport="false" schedulerSupport="false" dataDirectory="%[1]s/data">
    <plugins>
      <simpleAuthenticationPlugin anonymousAccessAllowed="false">
        <users>
          <authenticationUser username="` + User + `" password="` + Password + `" groups="producers"/>
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
    <persistenceAdapter><kahaDB directory="%[1]s/data/kahadb"/></persistenceAdapter>%[3]s
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:%[2]d"/>%[4]s
    </transportConnectors>
  </broker>
</beans>
`

// Broker is a running broker.
type Broker struct {
	tb      testing.TB
	dir     string
	port    int
	tlsPort int // 0: no TLS connector
	pid     int
	exited  chan struct{}
}

// Start runs a broker for the test and stops it when the test ends.
func Start(tb testing.TB) *Broker {
	tb.Helper()
	b := newBroker(tb)
	b.configure("", "")
	b.Restart()
	return b
}

// StartTLS runs a broker like Start with a second STOMP connector, over
// TLS (stomp+ssl), at TLSAddr; it presents cert, whose key must be one
// PKCS#12 can hold (RSA or ECDSA).
func StartTLS(tb testing.TB, cert tls.Certificate) *Broker {
	tb.Helper()
	b := newBroker(tb)
	b.tlsPort = freePort(tb)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		tb.Fatal(err)
	}
	var chain []*x509.Certificate
	for _, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			tb.Fatal(err)
		}
		chain = append(chain, c)
	}
	// Java reads PKCS#12 key stores; the password only satisfies the format.
	const pass = "keystore"
	p12, err := pkcs12.Modern.Encode(cert.PrivateKey, leaf, chain, pass)
	if err != nil {
		tb.Fatal(err)
	}
	store := filepath.Join(b.dir, "broker.p12")
	if err := os.WriteFile(store, p12, 0o600); err != nil {
		tb.Fatal(err)
	}
	b.configure(fmt.Sprintf(`
    <sslContext><sslContext keyStore="file:%s" keyStorePassword="%s" keyStoreType="pkcs12"/></sslContext>`, store, pass),
		fmt.Sprintf(`
      <transportConnector name="stomp+ssl" uri="stomp+ssl://127.0.0.1:%d"/>`, b.tlsPort))
	b.Restart()
	return b
}

func newBroker(tb testing.TB) *Broker {
	tb.Helper()
	if _, err := os.Stat(Jar); err != nil {
		tb.Fatalf("ActiveMQ is needed (apt-get install activemq; .ci/run does): %v", err)
	}
	return &Broker{tb: tb, dir: tb.TempDir(), port: freePort(tb)}
}

// freePort is a loopback port free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// configure writes the broker's activemq.xml with more elements and
// connectors.
func (b *Broker) configure(elements, connectors string) {
	b.tb.Helper()
	xml := fmt.Appendf(nil, config, b.dir, b.port, elements, connectors)
	if err := os.WriteFile(filepath.Join(b.dir, "activemq.xml"), xml, 0o600); err != nil {
		b.tb.Fatal(err)
	}
}

// Restart runs the broker again on its directory and port, after Kill;
// Start runs it the first time.
func (b *Broker) Restart() {
	b.tb.Helper()
	java := exec.Command("java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1",
		"-Dactivemq.home=/usr/share/activemq", "-Dactivemq.base="+b.dir,
		"-Dactivemq.conf="+b.dir, "-Dactivemq.data="+filepath.Join(b.dir, "data"),
		"-jar", Jar, "start", "xbean:file:"+filepath.Join(b.dir, "activemq.xml"))
	log := filepath.Join(b.dir, "activemq.out")
	out, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		b.tb.Fatal(err)
	}
	defer out.Close()
	java.Stdout, java.Stderr = out, out
	java.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := java.Start(); err != nil {
		b.tb.Fatalf("java: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = java.Wait()
		close(exited)
	}()
	b.pid, b.exited = java.Process.Pid, exited
	b.tb.Cleanup(func() { stop(java.Process.Pid, exited) })
	deadline := time.After(startLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := b.listening()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-exited:
			logged, _ := os.ReadFile(log)
			b.tb.Fatalf("ActiveMQ exited on start:\n%s", logged)
		case <-deadline:
			logged, _ := os.ReadFile(log)
			b.tb.Fatalf("ActiveMQ did not start: %v\n%s", err, logged)
		}
	}
}

// listening is nil once every connector accepts connections.
func (b *Broker) listening() error {
	addrs := []string{b.Addr()}
	if b.tlsPort != 0 {
		addrs = append(addrs, b.TLSAddr())
	}
	for _, addr := range addrs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		_ = c.Close()
	}
	return nil
}

// stop ends a broker's process group: SIGTERM, then SIGKILL after
// stopLimit.
func stop(pid int, exited chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopLimit):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
}

// Kill stops the broker at once, as a crash would, and waits until it
// has exited, so that its store's lock is free for Restart.
func (b *Broker) Kill() {
	_ = syscall.Kill(-b.pid, syscall.SIGKILL)
	<-b.exited
}

// Addr is the broker's STOMP address.
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// TLSAddr is the broker's STOMP over TLS address, when StartTLS ran it.
func (b *Broker) TLSAddr() string { return "127.0.0.1:" + strconv.Itoa(b.tlsPort) }

// TLSURL is the activemqs:// callback of a destination, as User.
func (b *Broker) TLSURL(dest string) string {
	return fmt.Sprintf("activemqs://%s:%s@%s%s", User, Password, b.TLSAddr(), dest)
}

// URL is the activemq:// callback of a destination (/queue/NAME), as
// User.
func (b *Broker) URL(dest string) string {
	return fmt.Sprintf("activemq://%s:%s@%s%s", User, Password, b.Addr(), dest)
}

// Consumer subscribes to a destination as User, acknowledging
// automatically; it disconnects when the test ends.
func (b *Broker) Consumer(dest string) *stomp.Subscription {
	b.tb.Helper()
	c, err := stomp.Dial("tcp", b.Addr(), stomp.ConnOpt.Login(User, Password), stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.Logger(quiet{}))
	if err != nil {
		b.tb.Fatal(err)
	}
	b.tb.Cleanup(func() { _ = c.MustDisconnect() })
	sub, err := c.Subscribe(dest, stomp.AckAuto)
	if err != nil {
		b.tb.Fatal(err)
	}
	return sub
}

// Next is a subscription's next message; the test fails if none comes
// within limit.
func Next(tb testing.TB, sub *stomp.Subscription, limit time.Duration) *stomp.Message {
	tb.Helper()
	select {
	case m := <-sub.C:
		if m.Err != nil {
			tb.Fatal(m.Err)
		}
		return m
	case <-time.After(limit):
		tb.Fatal("no message from ActiveMQ")
		return nil
	}
}

// quiet keeps go-stomp from logging the consumers' ends.
type quiet struct{}

func (quiet) Debugf(string, ...any)   {}
func (quiet) Infof(string, ...any)    {}
func (quiet) Warningf(string, ...any) {}
func (quiet) Errorf(string, ...any)   {}
func (quiet) Debug(string)            {}
func (quiet) Info(string)             {}
func (quiet) Warning(string)          {}
func (quiet) Error(string)            {}

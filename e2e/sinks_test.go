package e2e

import (
	"crypto/tls"
	"fmt"
	"strconv"
	"testing"

	"github.com/boomerangd/boomerang/internal/activemqtest"
)

// A client registered with boomtool and an activemq:// callback gets its
// tasks, set with boomtool, into the broker's queue: each group in order,
// with the Boomerang headers. A malformed queue callback is refused at
// registration, naming the field and the reason.
func TestActiveMQSinkThroughTheServer(t *testing.T) {
	t.Parallel()
	mq := activemqtest.Start(t)
	sub := mq.Consumer("/queue/orders.e2e")
	s := startServer(t, "")
	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	admin.fails(1, "callback.endpoint", "client", "register", "shop", "--new-password", "shop-password",
		"--callback", "activemq://"+mq.Addr()+"/orders.e2e")
	admin.fails(1, "must be a FIFO queue", "client", "register", "shop", "--new-password", "shop-password",
		"--callback", "sqs://eu-west-1/orders")
	admin.ok("client", "register", "shop", "--new-password", "shop-password", "--callback", mq.URL("/queue/orders.e2e"))
	shop := newCLI(t, s.tcp)
	shop.ok("login", "--client", "shop", "--password", "shop-password")
	const perGroup = 5
	groups := []string{"eu-1", "us-2"}
	for i := range perGroup {
		for _, g := range groups {
			shop.ok("set", fmt.Sprintf("%s/%d", g, i), "--group", g)
		}
	}
	next := map[string]int{}
	for range perGroup * len(groups) {
		m := activemqtest.Next(t, sub, waitLimit)
		g := m.Header.Get("Boomerang-Group")
		if want := g + "/" + strconv.Itoa(next[g]); string(m.Body) != want || m.Header.Get("Boomerang-Client") != "shop" {
			t.Fatalf("got %q from client %q, want %q from shop: not in group order", m.Body, m.Header.Get("Boomerang-Client"), want)
		}
		next[g]++
	}
}

// A server started with --sink-ca delivers over activemqs:// to a broker
// whose certificate that CA signed.
func TestActiveMQSinkOverTLSWithSinkCA(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	cert, err := tls.LoadX509KeyPair(p.cert, p.key)
	if err != nil {
		t.Fatal(err)
	}
	mq := activemqtest.StartTLS(t, cert)
	sub := mq.Consumer("/queue/orders.tls")
	s := startServer(t, "", "--sink-ca", p.ca)
	admin := newCLI(t, s.tcp)
	admin.ok("login", "--client", "admin", "--password", adminPassword)
	admin.ok("client", "register", "shop", "--new-password", "shop-password", "--callback", mq.TLSURL("/queue/orders.tls"))
	shop := newCLI(t, s.tcp)
	shop.ok("login", "--client", "shop", "--password", "shop-password")
	shop.ok("set", "over tls", "--group", "eu-1")
	if m := activemqtest.Next(t, sub, waitLimit); string(m.Body) != "over tls" || m.Header.Get("Boomerang-Client") != "shop" {
		t.Fatalf("got %q from client %q", m.Body, m.Header.Get("Boomerang-Client"))
	}
}

package e2e

import (
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

package egress

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"10.0.0.0/8", "10.1.2.3/8", "192.0.2.7", "fd00::/8", "::1", "example.com", "*.Example.COM.", "metadata"} {
		if _, err := ParseRule(s); err != nil {
			t.Errorf("ParseRule(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "*.", "http://x", "a b", "10.0.0.0/40", "ex ample.com", "host:80"} {
		if _, err := ParseRule(s); err == nil {
			t.Errorf("ParseRule(%q) accepted", s)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	def, err := New(nil, DefaultDeny)
	if err != nil {
		t.Fatal(err)
	}
	allowList, err := New([]string{"*.example.com", "203.0.113.0/24"}, []string{"bad.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    *Policy
		host string
		ok   bool
	}{
		{def, "169.254.169.254", false},
		{def, "[fe80::1]", false},
		{def, "0.0.0.0", false},
		{def, "::ffff:169.254.169.254", false},
		{def, "Metadata.Google.Internal.", false},
		{def, "127.0.0.1", true},
		{def, "hooks.example.com", true},
		{allowList, "a.example.com", true},
		{allowList, "example.com", false}, // a name outside the patterns, but may resolve into 203.0.113.0/24: undecided, not refused here
		{allowList, "bad.example.com", false},
		{allowList, "203.0.113.9", true},
		{allowList, "198.51.100.1", false},
		{nil, "169.254.169.254", true},
	} {
		err := c.p.CheckEndpoint(c.host)
		switch {
		case c.host == "example.com" && err == nil:
			// undecided names pass CheckEndpoint; see TestDialerChecksResolvedAddresses
		case c.ok && err != nil:
			t.Errorf("CheckEndpoint(%q) = %v, want allowed", c.host, err)
		case !c.ok && !errors.Is(err, ErrDenied):
			t.Errorf("CheckEndpoint(%q) = %v, want ErrDenied", c.host, err)
		}
	}
}

func TestNarrow(t *testing.T) {
	t.Parallel()
	server, _ := New(nil, DefaultDeny)
	client, err := New([]string{"*.tenant.example", "192.0.2.0/24"}, []string{"secret.tenant.example"})
	if err != nil {
		t.Fatal(err)
	}
	p := server.Narrow(client)
	for host, ok := range map[string]bool{
		"hooks.tenant.example":  true,
		"secret.tenant.example": false,
		"other.example":         false, // not in the client's allow list
		"192.0.2.10":            true,
		"198.51.100.1":          false,
		"169.254.169.254":       false, // the server's deny list still applies
	} {
		if err := p.CheckEndpoint(host); (err == nil) != ok {
			t.Errorf("narrowed CheckEndpoint(%q) = %v, want allowed %v", host, err, ok)
		}
	}
	if server.Narrow(nil) != server || server.Narrow(&Policy{}) != server {
		t.Error("narrowing by no rules should give the server's policy")
	}
}

// A name that passes as written is still refused when what it resolves to
// is denied: the check runs on the address actually dialled.
func TestDialerChecksResolvedAddresses(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	open := &Dialer{}
	c, err := open.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatalf("no policy: %v", err)
	}
	c.Close()

	loopback, _ := New(nil, []string{"127.0.0.0/8", "::1"})
	if err := loopback.CheckEndpoint("localhost"); err != nil {
		t.Fatalf("the name alone is not denied: %v", err)
	}
	d := &Dialer{Policy: loopback}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if _, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port)); !errors.Is(err, ErrDenied) {
			t.Errorf("dial %s: %v, want ErrDenied", host, err)
		}
	}
	// An allow list of networks admits a name by what it resolves to.
	viaAddr, _ := New([]string{"127.0.0.0/8", "::1"}, nil)
	c, err = (&Dialer{Policy: viaAddr}).DialContext(ctx, "tcp", net.JoinHostPort("localhost", port))
	if err != nil {
		t.Fatalf("allowed by its address: %v", err)
	}
	c.Close()
	other, _ := New([]string{"203.0.113.0/24"}, nil)
	if _, err := (&Dialer{Policy: other}).DialContext(ctx, "tcp", net.JoinHostPort("localhost", port)); !errors.Is(err, ErrDenied) {
		t.Errorf("resolved outside the allow list: %v, want ErrDenied", err)
	}
}

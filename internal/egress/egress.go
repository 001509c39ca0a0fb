package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
)

// ErrDenied: a destination the policy does not allow. The error names the
// destination and the rule.
var ErrDenied = errors.New("egress: destination not allowed by the callback policy")

// DefaultDeny is the deny list a server uses unless told otherwise.
var DefaultDeny = []string{
	"0.0.0.0/8", "::/128", // unspecified: reaches the local host
	"169.254.0.0/16", "fe80::/10", // link-local, including most metadata services
	"224.0.0.0/4", "ff00::/8", "255.255.255.255", // multicast and broadcast
	"100.100.100.200", "fd00:ec2::254", // metadata services outside link-local
	"metadata", "metadata.google.internal", "metadata.goog",
}

// Rule is one entry of a list: a network or a host pattern.
type Rule struct {
	text   string
	prefix netip.Prefix // valid for a network
	host   string       // lower case; "*.x" matches x's subdomains
}

// String returns the rule as it was parsed.
func (r Rule) String() string { return r.text }

// ParseRule reads a network, an address or a host pattern.
func ParseRule(s string) (Rule, error) {
	text := strings.TrimSpace(s)
	r := Rule{text: text}
	if p, err := netip.ParsePrefix(text); err == nil {
		r.prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(text); err == nil {
		r.prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return r, nil
	}
	name := normalize(strings.TrimPrefix(text, "*."))
	if name == "" || !validName(name) {
		return Rule{}, fmt.Errorf("egress: rule %q is neither a network, an address nor a host pattern", s)
	}
	r.host = normalize(text)
	return r, nil
}

// ParseRules reads a list of rules.
func ParseRules(list []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(list))
	for _, s := range list {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func normalize(host string) string { return strings.TrimSuffix(strings.ToLower(host), ".") }

// validName accepts letters, digits, hyphens, underscores and dots, the
// characters of host names in practice.
func validName(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (r Rule) matchesHost(host string) bool {
	if r.host == "" {
		return false
	}
	if suffix, ok := strings.CutPrefix(r.host, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return host == r.host
}

func (r Rule) matchesAddr(a netip.Addr) bool { return r.prefix.IsValid() && r.prefix.Contains(a) }

// Policy is an allow list and a deny list. The zero Policy and a nil
// *Policy allow everything. A Policy is never changed once built, so it is
// safe for concurrent use.
type Policy struct {
	allow, deny []Rule
	narrower    *Policy // a client's own rules, matched on endpoints only
}

// New builds a policy from rule lists.
func New(allow, deny []string) (*Policy, error) {
	a, err := ParseRules(allow)
	if err != nil {
		return nil, err
	}
	d, err := ParseRules(deny)
	if err != nil {
		return nil, err
	}
	return &Policy{allow: a, deny: d}, nil
}

// Allow and Deny return the rules as parsed.
func (p *Policy) Allow() []Rule { return p.rules(true) }
func (p *Policy) Deny() []Rule  { return p.rules(false) }

func (p *Policy) rules(allow bool) []Rule {
	if p == nil {
		return nil
	}
	if allow {
		return slices.Clone(p.allow)
	}
	return slices.Clone(p.deny)
}

// Narrow returns a policy that also applies client's rules to endpoints
// as written. A nil or empty client policy gives p itself.
func (p *Policy) Narrow(client *Policy) *Policy {
	if client.empty() {
		return p
	}
	n := &Policy{narrower: client}
	if p != nil {
		n.allow, n.deny = p.allow, p.deny
	}
	return n
}

func (p *Policy) empty() bool {
	return p == nil || len(p.allow) == 0 && len(p.deny) == 0 && p.narrower == nil
}

// verdict is a partial decision about a destination.
type verdict int

const (
	undecided verdict = iota // nothing denied; the allow list not yet met
	allowed
	denied
)

// judgeHost decides what the host as written can tell. A literal address
// is judged whole.
func (p *Policy) judgeHost(host string) (verdict, Rule) {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.judgeAddr(a.Unmap())
	}
	host = normalize(host)
	for _, r := range p.deny {
		if r.matchesHost(host) {
			return denied, r
		}
	}
	if len(p.allow) == 0 {
		return allowed, Rule{}
	}
	for _, r := range p.allow {
		if r.matchesHost(host) {
			return allowed, r
		}
	}
	return undecided, Rule{}
}

func (p *Policy) judgeAddr(a netip.Addr) (verdict, Rule) {
	for _, r := range p.deny {
		if r.matchesAddr(a) {
			return denied, r
		}
	}
	if len(p.allow) == 0 {
		return allowed, Rule{}
	}
	for _, r := range p.allow {
		if r.matchesAddr(a) {
			return allowed, r
		}
	}
	return undecided, Rule{}
}

// CheckEndpoint checks a callback endpoint's host as written (a name or a
// literal address, IPv6 with or without brackets). A name whose fate
// depends on its addresses passes here; Dialer decides it.
func (p *Policy) CheckEndpoint(host string) error {
	if p == nil {
		return nil
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if p.narrower != nil {
		v, r := p.narrower.judgeHost(host)
		switch v {
		case denied:
			return deniedError(host, "the client's callback rules deny it ("+r.String()+")")
		case undecided:
			return deniedError(host, "the client's callback rules do not allow it")
		}
	}
	v, r := p.judgeHost(host)
	switch {
	case v == denied:
		return deniedError(host, "the server's callback policy denies it ("+r.String()+")")
	case v == undecided && isAddr(host):
		return deniedError(host, "the server's callback policy does not allow it")
	}
	return nil
}

func isAddr(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// checkDial checks a connection to addr made for host.
func (p *Policy) checkDial(host string, addr netip.Addr) error {
	hv, r := p.judgeHost(host)
	if hv == denied {
		return deniedError(host, "the server's callback policy denies it ("+r.String()+")")
	}
	av, r := p.judgeAddr(addr)
	switch {
	case av == denied:
		return deniedError(host, fmt.Sprintf("its address %s is denied by the server's callback policy (%s)", addr, r))
	case av == undecided && hv != allowed:
		return deniedError(host, fmt.Sprintf("its address %s is not allowed by the server's callback policy", addr))
	}
	return nil
}

func deniedError(host, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrDenied, host, why)
}

// Dialer opens connections for the delivery engine, checking each
// against the server's policy: the host name before resolution, each
// address right before it is connected to.
type Dialer struct {
	Policy *Policy    // the server's; nil allows everything
	Base   net.Dialer // its Control and ControlContext are replaced
}

// DialContext is net.Dialer.DialContext with the policy's checks.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	server := d.Policy
	if server == nil {
		server = &Policy{}
	}
	if v, r := server.judgeHost(host); v == denied {
		return nil, deniedError(host, "the server's callback policy denies it ("+r.String()+")")
	}
	nd := d.Base
	nd.Control = nil
	nd.ControlContext = func(_ context.Context, _, resolved string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(resolved)
		if err != nil {
			return fmt.Errorf("%w: %s: unreadable address %q", ErrDenied, host, resolved)
		}
		return server.checkDial(host, ap.Addr().Unmap())
	}
	return nd.DialContext(ctx, network, address)
}

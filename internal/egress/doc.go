// Package egress decides which network destinations callbacks may reach,
// so that a client cannot aim Boomerang's deliveries at addresses only the
// server can reach: its own loopback services, cloud metadata endpoints,
// other internal hosts.
//
// # Rules
//
// A rule is a network ("10.0.0.0/8", "fd00::/8"), an address ("192.0.2.7",
// which is the network of that one address) or a host pattern: a name
// ("metadata.google.internal") or a name's subdomains ("*.internal",
// which matches "a.internal" and "b.a.internal" but not "internal").
// Names compare without case and without a trailing dot.
//
// # Policy
//
// A Policy has an allow list and a deny list. A destination, a host as
// written in an endpoint and the address a connection goes to, passes
// when:
//
//  1. neither the host nor the address matches a deny rule (deny wins);
//  2. the allow list is empty, or the host matches an allow pattern, or
//     the address an allow network.
//
// DefaultDeny is the server's deny list unless configured otherwise:
// unspecified, link-local, multicast and broadcast addresses, and the
// well-known cloud metadata addresses and names.
//
// # When it is checked
//
// CheckEndpoint runs when a callback is registered and before each
// attempt. It sees only the endpoint as written: a literal address is
// checked whole; a host name is checked against the host patterns, and
// its addresses are left to the dial. Dialer checks every connection the
// delivery engine opens: the host name against the patterns, then, in
// the dialer's Control hook, each address DNS gave, right before the
// connection is made. A name that resolves to a denied address is refused
// there, however it resolved at registration, so DNS rebinding gains
// nothing.
//
// A client's own rules (Policy.Narrow) are matched against the endpoint
// as written only, never after resolution: a client whose allow list
// holds only networks can use only literal addresses in it.
package egress

package server

import "context"

// peerKey carries the address a request came from, for the login
// throttle and session listings.
type peerKey struct{}

func withPeer(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, peerKey{}, addr)
}

// peerOf returns the address withPeer put in ctx, or "".
func peerOf(ctx context.Context) string {
	addr, _ := ctx.Value(peerKey{}).(string)
	return addr
}

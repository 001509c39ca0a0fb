package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// Forwarding. In a cluster any node takes any request: one for a shard
// this node does not lead (scheduler.NotLeaderError, refused before
// anything was done) goes on to the shard's leader, over its Connect
// API, on behalf of the client this node authenticated. The leader takes
// the client's identity from a header signed with the cluster's
// forwarding key (kept in etcd), and never forwards such a request again.

// forwardHeader carries "<client>;<role>;<unix ms>;<hex HMAC-SHA256>".
const forwardHeader = "Boomerang-Forwarded-For"

// forwardSkew bounds the age of a forwarded request's signature.
const forwardSkew = 30 * time.Second

// forwarder sends requests on to shards' leaders.
type forwarder struct {
	member *cluster.Member
	http   *http.Client
	scheme string
	// key returns the cluster's forwarding key: the member's ForwardKey.
	key func(context.Context) ([]byte, error)
	// sent counts the requests sent on, by operation; nil in tests.
	sent *prometheus.CounterVec
}

type forwarderKey struct{}

func withForwarder(ctx context.Context, f *forwarder) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, forwarderKey{}, f)
}

// forwardOn sends the request on to the leader of the shard err says this
// node does not lead, if ctx allows forwarding; otherwise it returns r
// and err as they are.
func forwardOn[Req, Resp any](ctx context.Context, p auth.Principal, in *Req, r *Resp, err error) (*Resp, error) {
	var nl *scheduler.NotLeaderError
	f := forwarderOf(ctx)
	if f == nil || !errors.As(err, &nl) {
		return r, err
	}
	leader, ok := f.leader(nl.Shard)
	switch {
	case routed(ctx):
		if !ok {
			leader = cluster.NodeInfo{} // none known yet: the client asks again
		}
		return nil, f.notLeaderAnswer(nl.Shard, leader)
	case !ok:
		return r, err
	}
	return forwardTo[Req, Resp](ctx, f, leader, p, in)
}

// forwarderOf returns the forwarder ctx allows forwarding with, or nil.
func forwarderOf(ctx context.Context) *forwarder {
	f, _ := ctx.Value(forwarderKey{}).(*forwarder)
	return f
}

// leader returns the node that leads shard, if it is another one that
// can be forwarded to.
func (f *forwarder) leader(shard uint16) (cluster.NodeInfo, bool) {
	st := f.member.State()
	if st == nil {
		return cluster.NodeInfo{}, false
	}
	leader, ok := st.Leader(shard)
	return leader, ok && leader.ID != f.member.ID() && leader.HTTP != ""
}

// forwardTo sends in, on behalf of p, to node's Connect API.
func forwardTo[Req, Resp any](ctx context.Context, f *forwarder, node cluster.NodeInfo, p auth.Principal, in *Req) (*Resp, error) {
	msg, ok := any(in).(proto.Message)
	if !ok {
		return nil, fmt.Errorf("server: cannot forward %T", in)
	}
	sig, err := f.sign(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("forwarding: %w: %w", err, scheduler.ErrNotLeader)
	}
	method := strings.TrimSuffix(string(msg.ProtoReflect().Descriptor().Name()), "Request")
	url := f.scheme + "://" + node.HTTP + "/" + boomerangv1connect.BoomerangServiceName + "/" + method
	req := connect.NewRequest(in)
	req.Header().Set(forwardHeader, sig)
	if f.sent != nil {
		f.sent.WithLabelValues(method).Inc()
	}
	resp, err := connect.NewClient[Req, Resp](f.http, url).CallUnary(ctx, req)
	if err != nil {
		return nil, remoteError(err)
	}
	return resp.Msg, nil
}

// remoteErr is the leader's answer to a forwarded request.
type remoteErr struct{ wire *boomerangv1.Error }

func (e *remoteErr) Error() string { return e.wire.GetMessage() }

// remoteError keeps the wire Error a leader attached to its error.
func remoteError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		for _, d := range ce.Details() {
			if v, derr := d.Value(); derr == nil {
				if wire, ok := v.(*boomerangv1.Error); ok {
					return &remoteErr{wire: wire}
				}
			}
		}
	}
	return fmt.Errorf("forwarding to the shard's leader: %w", scheduler.ErrNotLeader)
}

// sign makes p's forwarding header.
func (f *forwarder) sign(ctx context.Context, p auth.Principal) (string, error) {
	key, err := f.key(ctx)
	if err != nil {
		return "", err
	}
	body := p.Client + ";" + strconv.Itoa(int(p.Role)) + ";" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	return body + ";" + mac(key, body), nil
}

func mac(key []byte, body string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(body))
	return hex.EncodeToString(h.Sum(nil))
}

// forwarded returns the principal a forwarded request was signed for,
// and whether it carries a valid signature.
func (f *forwarder) forwarded(ctx context.Context, header string) (auth.Principal, bool) {
	parts := strings.Split(header, ";")
	if f == nil || len(parts) != 4 {
		return auth.Principal{}, false
	}
	key, err := f.key(ctx)
	if err != nil {
		return auth.Principal{}, false
	}
	body := strings.Join(parts[:3], ";")
	if !hmac.Equal([]byte(mac(key, body)), []byte(parts[3])) {
		return auth.Principal{}, false
	}
	role, rerr := strconv.Atoi(parts[1])
	ms, terr := strconv.ParseInt(parts[2], 10, 64)
	if rerr != nil || terr != nil || time.Since(time.UnixMilli(ms)).Abs() > forwardSkew {
		return auth.Principal{}, false
	}
	return auth.Principal{Client: parts[0], Role: auth.Role(role)}, true
}

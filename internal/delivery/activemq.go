package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/go-stomp/stomp/v3/frame"
)

// Default ports of ActiveMQ's STOMP connectors, plain and TLS.
const (
	defaultSTOMPPort  = "61613"
	defaultSTOMPSPort = "61612"
)

// activemqConns is the number of connections per broker. ActiveMQ works
// through one connection's frames in turn, waiting for its store on each
// persistent send; sends spread over several connections are written to
// its journal together.
const activemqConns = 8

// activemqEndpoint is a parsed
// activemq[s]://[user[:password]@]host[:port]/(queue|topic)/NAME.
type activemqEndpoint struct {
	server      string // scheme, credentials and address: one connection set each
	addr        string // host:port
	tls         bool
	user, pass  string
	destination string // /queue/NAME or /topic/NAME; may hold GroupPlaceholder
}

func parseActiveMQEndpoint(endpoint string) (activemqEndpoint, error) {
	ep, u, err := parseActiveMQServer(endpoint)
	if err != nil {
		return activemqEndpoint{}, err
	}
	if err := checkDestination(strings.ReplaceAll(u.Path, GroupPlaceholder, "g")); err != nil {
		return activemqEndpoint{}, err
	}
	ep.destination = u.Path
	return ep, nil
}

// parseActiveMQServer parses an endpoint up to its destination: what
// one connection serves.
func parseActiveMQServer(endpoint string) (activemqEndpoint, *url.URL, error) {
	scheme, port := "activemq", defaultSTOMPPort
	if strings.HasPrefix(endpoint, "activemqs:") {
		scheme, port = "activemqs", defaultSTOMPSPort
	}
	u, err := parseSinkURL(endpoint, scheme, port)
	if err != nil {
		return activemqEndpoint{}, nil, err
	}
	if u.RawQuery != "" {
		return activemqEndpoint{}, nil, errors.New("must not have a query: activemq://host:port/queue/NAME")
	}
	ep := activemqEndpoint{addr: u.Host, tls: scheme == "activemqs"}
	if u.User != nil {
		ep.user = u.User.Username()
		ep.pass, _ = u.User.Password()
	}
	server := *u
	server.Path, server.RawPath = "", ""
	ep.server = server.String()
	return ep, u, nil
}

// checkDestination accepts /queue/NAME and /topic/NAME where NAME is a
// literal ActiveMQ destination: no wildcard, no composite list, no white
// space or control characters.
func checkDestination(d string) error {
	kind, name, ok := strings.Cut(strings.TrimPrefix(d, "/"), "/")
	switch {
	case !ok || (kind != "queue" && kind != "topic"):
		return errors.New("must name a destination: activemq://host:port/queue/NAME or /topic/NAME")
	case name == "":
		return fmt.Errorf("%s name is empty", kind)
	case strings.ContainsAny(name, "*>,/"):
		return fmt.Errorf("%s %q has a wildcard, a comma or a slash: destinations are literal", kind, name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%s %q has white space or a control character", kind, name)
	}
	return nil
}

// activemqTransport sends each attempt to an ActiveMQ Classic queue or
// topic over STOMP 1.2 as a persistent message with a receipt request:
// the broker's receipt, sent once the message is stored, is success. The
// group travels as JMSXGroupID, so ActiveMQ's message groups give each
// group to one consumer at a time, in order.
//
// The transport drives go-stomp's frame codec itself rather than its
// Conn: Conn holds its connection's lock while it waits for a receipt, so
// it carries one send at a time, and a connection that breaks while a
// send is queued can leave that send waiting for good. Here one
// connection pipelines many sends and a reader matches the receipts, as
// the raw TCP transport does with Acks; attempts take the broker's
// activemqConns connections in turn.
type activemqTransport struct {
	e     *Engine
	conns *brokers[*stompConn] // by server and connection number
	next  atomic.Uint32
}

func newActiveMQTransport(e *Engine) *activemqTransport {
	t := &activemqTransport{e: e}
	t.conns = newBrokers(e, t.dial)
	return t
}

func (t *activemqTransport) dial(ctx context.Context, key string) (*stompConn, error) {
	server, _, _ := strings.Cut(key, "#")
	ep, _, err := parseActiveMQServer(server)
	if err != nil {
		return nil, err
	}
	nc, err := t.e.dialer().DialContext(ctx, "tcp", ep.addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(ep.addr)
	if ep.tls {
		tc := tls.Client(nc, &tls.Config{ServerName: host, RootCAs: t.e.cfg.SinkRootCAs, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	c, err := connectSTOMP(ctx, nc, host, ep.user, ep.pass)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}

func (t *activemqTransport) contextual() bool { return true }

func (t *activemqTransport) send(a *attempt) { go t.publish(a) }

func (t *activemqTransport) publish(a *attempt) {
	ep, err := parseActiveMQEndpoint(a.route.endpoint)
	if err != nil {
		a.finish(permanent(fmt.Errorf("%w: %v", ErrInvalidCallback, err)))
		return
	}
	dest := withGroup(ep.destination, a.task)
	if err := checkDestination(dest); err != nil {
		a.finish(permanent(fmt.Errorf("%w: the group does not fit the destination: %v", ErrInvalidCallback, err)))
		return
	}
	// The deadline bounds a write to a broker that stopped reading.
	ctx, cancel := context.WithTimeout(a.ctx, a.route.timeout)
	defer cancel()
	// A server URL has no fragment, so "#" sets the connection number apart.
	key := ep.server + "#" + strconv.Itoa(int(t.next.Add(1)%activemqConns))
	c, release, err := t.conns.acquire(ctx, key, a.begun)
	if err != nil {
		a.finish(err)
		return
	}
	defer release()
	f := frame.New(frame.SEND,
		frame.Destination, dest,
		frame.ContentType, "application/octet-stream",
		frame.ContentLength, strconv.Itoa(len(a.task.Payload)),
		"persistent", "true",
		headerMessageID, sinkMessageID(a.task),
	)
	if a.task.Group != "" {
		f.Header.Add("JMSXGroupID", a.task.Group)
	}
	sinkHeaders(a, f.Header.Add)
	f.Body = a.task.Payload
	a.finish(c.send(ctx, f))
}

// headerMessageID carries sinkMessageID where the broker assigns its own
// message id (ActiveMQ sets message-id itself).
const headerMessageID = "Boomerang-Message-Id"

func (t *activemqTransport) sweep(cutoff time.Time) { t.conns.sweep(cutoff) }

func (t *activemqTransport) close() { t.conns.close() }

// stompConn is one STOMP connection carrying many sends at once, each
// with its own receipt.
type stompConn struct {
	nc   net.Conn
	dead atomic.Bool

	wmu sync.Mutex // one frame at a time
	w   *frame.Writer

	mu      sync.Mutex
	waits   map[string]chan error // by receipt id; buffered
	nextID  uint64
	failure error // why the connection ended; set once
}

// connectSTOMP opens the STOMP session on nc and starts its reader.
func connectSTOMP(ctx context.Context, nc net.Conn, host, user, pass string) (*stompConn, error) {
	connect := frame.New(frame.CONNECT, frame.AcceptVersion, "1.2", frame.Host, host, frame.HeartBeat, "0,0")
	if user != "" {
		connect.Header.Add(frame.Login, user)
		connect.Header.Add(frame.Passcode, pass)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	}
	w, r := frame.NewWriter(nc), frame.NewReader(nc)
	if err := w.Write(connect); err != nil {
		return nil, err
	}
	answer, err := r.Read()
	switch {
	case err != nil:
		return nil, err
	case answer == nil || answer.Command != frame.CONNECTED:
		return nil, fmt.Errorf("%w: ActiveMQ refused the connection: %s", ErrRejected, stompErrorText(answer))
	case answer.Header.Get(frame.Version) != "1.2":
		return nil, fmt.Errorf("%w: the broker does not speak STOMP 1.2", ErrRejected)
	}
	_ = nc.SetDeadline(time.Time{})
	c := &stompConn{nc: nc, w: w, waits: map[string]chan error{}}
	go c.read(r)
	return c, nil
}

func (c *stompConn) broken() bool { return c.dead.Load() }
func (c *stompConn) close()       { _ = c.nc.Close() }

// send sends f with a receipt request and waits for the receipt, an
// ERROR about it, or the end of ctx.
func (c *stompConn) send(ctx context.Context, f *frame.Frame) error {
	done := make(chan error, 1)
	c.mu.Lock()
	if c.failure != nil {
		err := c.failure
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := strconv.FormatUint(c.nextID, 10)
	c.waits[id] = done
	c.mu.Unlock()
	f.Header.Add(frame.Receipt, id)
	c.wmu.Lock()
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.nc.SetWriteDeadline(deadline)
	}
	err := c.w.Write(f)
	c.wmu.Unlock()
	if err != nil {
		c.close() // a half-written frame spoils the connection; the reader fails every wait
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// No receipt within the attempt's timeout: the broker or the
		// path to it is in trouble, or the engine is closing. Closing
		// the connection makes the next attempt dial again rather than
		// wait on a connection that may be dead; the sends still on it
		// fail and are retried.
		c.close()
		return ErrClosed // the attempt has ended
	}
}

// read matches receipts and errors to their sends until the connection
// ends, then fails the sends still waiting.
func (c *stompConn) read(r *frame.Reader) {
	var err error
	for {
		var f *frame.Frame
		if f, err = r.Read(); err != nil {
			err = fmt.Errorf("%w: ActiveMQ: %w", ErrUnreachable, err)
			break
		}
		if f == nil { // a heart-beat
			continue
		}
		id, about := f.Header.Contains(frame.ReceiptId)
		if f.Command == frame.ERROR && !about {
			// About the connection, not one frame: the broker closes it.
			err = fmt.Errorf("%w: ActiveMQ: %s", ErrRejected, stompErrorText(f))
			break
		}
		var result error
		if f.Command != frame.RECEIPT {
			// An ERROR about one send: refused (not authorized, a full
			// store or quota), which may change; worth a retry.
			result = fmt.Errorf("%w: ActiveMQ: %s", ErrRejected, stompErrorText(f))
		}
		c.mu.Lock()
		w := c.waits[id]
		delete(c.waits, id)
		c.mu.Unlock()
		if w != nil {
			w <- result
		}
	}
	c.dead.Store(true)
	_ = c.nc.Close()
	c.mu.Lock()
	c.failure = err
	waits := c.waits
	c.waits = nil
	c.mu.Unlock()
	for _, w := range waits {
		w <- err
	}
}

// stompErrorText is an ERROR frame's message header, short and
// sanitized; its body (a broker's stack trace) is never kept.
func stompErrorText(f *frame.Frame) string {
	if f == nil {
		return "no answer"
	}
	if m := f.Header.Get(frame.Message); m != "" {
		return safeText(m)
	}
	return "unexpected " + f.Command + " frame"
}

// Package client is the Go SDK for Boomerang: it schedules, inspects and
// manages tasks on a Boomerang server over the raw TCP protocol, and with
// its receivers takes the callbacks the server delivers.
//
// # Connecting
//
//	c, err := client.Dial(ctx, "127.0.0.1:7070", client.Credentials{ClientID: "billing", Password: pw})
//	if err != nil { ... }
//	defer c.Close()
//	task, err := c.Schedule(ctx, []byte("invoice 42"), client.After(90*time.Second), client.InGroup("customer-7"))
//
// Dial opens one TCP connection (TLS with WithTLS), logs in with the
// credentials, and asks the server for its limits. Every operation of the service is a method
// taking and returning the boomerangv1 messages (RegisterTask, ListTasks,
// ReplayDeadLetter, ...); Schedule, ScheduleBatch, Cancel, Tasks and DeadLetters are
// shorter forms of the common ones.
//
// # Pipelining
//
// A Client is safe for concurrent use. Calls from any number of
// goroutines share its connection: each request carries its own id, the
// server answers in any order, and a reader goroutine hands each response
// to its caller. Requests that arrive together leave in one write. At most
// WithMaxInFlight requests (default DefaultMaxInFlight) are unanswered at
// a time; further calls wait for a slot, within their context.
//
// # Batches
//
// ScheduleBatch registers many tasks in RegisterTasks requests (at most
// MaxBatch tasks each, within the server's frame limit; it splits
// larger batches itself). Each task succeeds or fails on its own, and the
// tasks of one shard become durable together, which costs the server far
// less than a request per task.
//
// Schedule gathers concurrent calls the same way, without any change to
// the callers: a call made while gathered requests are in flight waits
// up to a linger (WithCoalescing, default DefaultLinger, at most 1 ms) for
// others to share its request, and a call that finds none in flight goes
// out at once, alone. Each caller still gets its own task, with its
// payload, or its own error, exactly as if it had gone alone; a caller
// whose context ends stops waiting without failing the others. Calls
// with an idempotency key always go alone (a matched key returns the
// earlier task's payload only to RegisterTask), and WithCoalescing(0)
// makes every call go alone.
//
// # Sessions
//
// The server identifies a client by the session id that login returns.
// The Client refreshes its session before it expires (after two thirds of
// its lifetime). A request refused with SESSION_EXPIRED or UNAUTHORIZED is
// sent once more: with the current session if another call replaced it
// meanwhile, otherwise after logging in again with the credentials (so an
// UNAUTHORIZED that means "not allowed" costs one extra login); so a
// Client carries on past a session that expired or was ended. A Client
// made with WithSession and no credentials cannot log in again: its
// calls then fail with ErrSessionExpired or ErrUnauthorized. Session
// returns the session in use, for tools that save it; Logout ends it on
// the server.
//
// # Clusters and routing
//
// Any node of a cluster takes any request, forwarding it to the leader
// of the request's shard when that is another node. A Client saves that
// hop: before its first request that can be routed it asks the node it
// dialed for the routing view (GetRoutes: which node leads each shard),
// computes each request's shard (a task's group, idempotency key or
// replace key, or the shard a task id carries) and sends the request to
// that shard's leader, over a connection of its own to each node it
// needs, dialed when first needed, with the same session. Ungrouped
// tasks without keys go to one leader after another. ScheduleBatch and
// the gathered Schedule calls send one RegisterTasks request per leader.
//
// A node that no longer leads the shard answers NOT_LEADER, naming the
// leader: the Client sends the request there and refreshes the view. A
// node that cannot be reached, or whose connection breaks with a read or
// an idempotent registration in flight, leaves the request to the node
// dialed, and a read or an idempotent registration answered BUSY (as one
// under way while its shard changes leaders is) is asked again a little
// later. None of these reaches the caller; after several attempts a
// request goes through the node dialed, which forwards it. A
// registration without idempotency key lost with a connection or
// answered BUSY fails with ErrConnectionLost or ErrBusy, as below: it
// may have taken effect. Against a standalone server (or one too
// old to route) the view fetch is the only extra request.
// WithRouting(false) sends every request to the node dialed.
//
// # Connection loss and reconnection
//
// When the connection breaks, every request in flight on it fails at once
// with ErrConnectionLost: it may or may not have taken effect on the
// server, and the Client cannot know which. A request that must happen
// exactly once should carry an idempotency key (WithIdempotencyKey) and
// be retried on ErrConnectionLost; the retry returns the task the first
// attempt created, if it did. Calls made after the break was noticed are
// not affected: they wait for the next connection.
//
// The Client reconnects in the background with exponential backoff and
// jitter (WithReconnectBackoff). Calls made meanwhile wait for the new
// connection until their context ends. If the server closed the
// connection with an error frame (a frame it could not read, an idle
// timeout), ErrConnectionLost wraps that *Error. Requests larger than the
// server's frame limit are refused locally with ErrInvalidRequest rather
// than sent, since the server would close the connection and fail every
// request in flight on it.
//
// # Deadlines
//
// Every method honours its context: waiting for a slot, for a connection
// and for the response. A call abandoned by its context may still take
// effect on the server; its late response is discarded.
//
// # Errors
//
// A request the server refused returns an *Error with the Status, the
// server's Message and, for INVALID_REQUEST, the offending Field. It
// matches the sentinel for its status with errors.Is (ErrInvalidRequest,
// ErrUnauthorized, ErrSessionExpired, ErrNotFound, ErrBusy, ErrGroupFull,
// ErrConflict, ErrInternal); errors.As extracts it; StatusOf reads the
// status of any error. Another client's task is ErrNotFound, as if it did
// not exist. ErrBusy and ErrGroupFull are safe to retry after a pause.
//
// # Receiving callbacks
//
// The server delivers due tasks to the callback registered for the client
// (HTTP, gRPC, raw TCP or UDP). The receivers in this package serve those
// protocols and hand each delivery to a Handler: HTTPReceiver (webhooks,
// with signature checks; see also VerifyWebhook), GRPCReceiver,
// TCPReceiver and UDPReceiver. See receiver.go. A Fence, wrapped around
// the handler, drops deliveries from shard leaders that were replaced
// (see docs/callbacks.md, "Fencing").
package client

// Package server puts the scheduler on the network: the Boomerang API
// over raw TCP frames and over Connect (gRPC, gRPC-Web, HTTP/JSON) on the
// HTTP port, with sessions, ownership checks, metrics and health
// endpoints. cmd/boomerang runs it.
//
//	s, err := server.New(server.Config{DataDir: dir, TCPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
//	err = s.Start(ctx)          // open, recover, listen; returns when serving
//	addr := s.TCPAddr()         // the bound address
//	err = s.Stop(ctx)           // drain, stop, close
//
// # Service
//
// Service holds every operation, independent of the transport: it checks
// each field (a failure names the field and the rule), enforces roles and
// ownership (a client sees and changes only its own tasks, dead letters,
// groups and sessions; an admin sees and changes all and may name any
// client; a read-only client sees what an admin sees and changes
// nothing), applies the client's defaults (a task's dispatch mode is its
// own, else its client's default, else NEXT_ON_ERROR; its callback is its
// override over the client's, checked at registration, also against the
// callback policy) and maps between the wire messages and the scheduler.
// List pages are cut short when their encoding would exceed the frame
// limit, so no response is larger than MaxFrameBytes. A due task of a
// blocked group reads BLOCKED, naming the dead letter, in GetTask and
// ListTasks (see markBlocked).
//
// # Errors
//
// errors.go holds the one table from internal errors (auth, scheduler,
// store, dispatch, context, framing) to wire status codes and messages,
// and from status codes to Connect codes. Connect errors carry the wire
// Error as a detail, so every client sees the exact status and field;
// withErrorDetail adds it to the errors connect raises itself.
//
// # Raw TCP
//
// Frames are varint-length-delimited protobuf messages (protodelim):
// boomerang.v1.Request from the client, boomerang.v1.Response from the
// server. Each connection has one reader and one writer goroutine, and a
// goroutine per request, so responses come back in completion order,
// matched by request_id. A request holds one of MaxInFlight slots from
// being read until its response is flushed, and bytes of the connection's
// and the server's buffer budgets (MaxConnBufferBytes, MaxBufferBytes;
// see conn). With the slots or a budget spent the reader stops reading
// and TCP flow control pushes back on the client, so memory stays
// bounded. A client that does not read its responses for WriteTimeout is
// disconnected.
//
// A request without a live session (other than Login), or without an
// operation, fails alone. A frame that breaks the stream closes the
// connection: a length over MaxFrameBytes, a malformed length prefix, a
// stream that ends inside a frame, an envelope whose top level does not
// parse, request_id 0. The server first answers the requests already
// read, then sends an error Response with request_id 0, then closes. An
// envelope that parses at the top level (so its request_id is known) but
// whose operation does not decode (invalid UTF-8, a damaged nested
// message) fails only that request, with INVALID_REQUEST on "body".
//
// A connection must log in (a Login, or any request with a live session)
// within HandshakeTimeout. Until it has, it counts against
// MaxPendingLogins and MaxPendingLoginsPerAddr, beyond which new
// connections are refused with BUSY. After that a connection with nothing
// outstanding that sends nothing for IdleTimeout is closed, as is one
// that leaves a frame unfinished for as long; both get an error frame
// first. Socket deadlines use real time. With Config.TLS the listener
// speaks TLS.
//
// # HTTP
//
// The HTTP port serves the Connect handler (HTTP/1.1, and HTTP/2:
// cleartext h2c without TLS, so gRPC works, negotiated with it), /healthz
// (the process is up), /readyz (200 once Start has finished until Stop
// begins: store open, scheduler running) and, unless Config.MetricsAddr
// gives them a listener of their own, /metrics (Prometheus, its own
// registry) and /debug/pprof/, behind Config.MetricsToken when set. A
// request must arrive whole within HTTPReadTimeout; its body may be a
// frame in the JSON mapping.
//
// # Start-up
//
// Start checks the data directory (created 0700; one its group or others
// may read is refused unless AllowOpenDataDir), opens the store, finds
// the secret keys (Config.SecretKeys, else a key generated into the data
// directory), lets auth seal the signing secrets, creates the bootstrap
// admin or warns that a configured admin password is not in use, starts
// delivery and the scheduler, listens, and logs a recovery summary.
//
// # Shutdown
//
// Stop marks the server not ready, stops accepting connections, stops
// reading requests, lets the requests already read finish and flushes
// their responses (raw TCP connections then get a BUSY "shutting down"
// error frame), waits for HTTP requests in progress, stops the scheduler
// (which waits for delivery attempts under way), closes the delivery
// engine and the store. If Stop's context ends first, connections are
// cut, and attempts still under way are delivered again after the next
// start.
package server

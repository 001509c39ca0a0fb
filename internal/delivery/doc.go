// Package delivery is Boomerang's callback engine: it delivers each
// attempt of a due task to its client's endpoint over HTTP, gRPC, raw TCP
// or UDP, or to a queue (NATS JetStream, RabbitMQ), and decides when a
// failed attempt is tried again. The scheduler calls it as its
// scheduler.Deliverer and scheduler.RetryDecider; the scheduler keeps
// group order, persists attempts and dead-letters.
//
//	e, err := delivery.New(delivery.Config{Clients: st, Pools: pools, Registerer: reg, Logger: log})
//	s, err := scheduler.New(scheduler.Config{Store: st, Deliverer: e, Retry: e})
//	...
//	err = s.Stop(ctx) // waits for the attempts under way, which needs e
//	err = e.Close(ctx)
//
// docs/callbacks.md is the contract for receivers: wire formats, headers,
// the signature, what each answer means. Package client has receivers for
// Go services.
//
// # An attempt
//
// Deliver never blocks its caller, a scheduler loop. It resolves the
// task's client (cached; read from Config.Clients on another goroutine
// the first time and after Invalidate), merges the callback field by
// field (the task's override where set, else the client's; see
// Effective), and hands the attempt to its dispatch pool, which starts it
// at once or queues it. A started attempt holds a pool slot, has a timer
// for its timeout, and goes to its protocol's transport. It ends exactly
// once, by the transport's answer or by the timer, whichever is first;
// the slot is released and the scheduler's done is called. An attempt
// that cannot be made (unknown client, no or bad callback, a UDP payload
// over the datagram limit) fails at once, before Deliver returns.
//
// # Transports
//
//   - HTTP: a POST of the payload with the Boomerang headers and an
//     HMAC-SHA256 signature (package webhook) per signing secret in use,
//     over one shared client whose keep-alive connections are pooled per
//     host. 2xx acknowledges. Redirects are not followed. Only the status
//     of another answer goes into the error, never its body.
//   - gRPC: boomerang.v1.CallbackService/Deliver with connect-go's gRPC
//     protocol over cleartext HTTP/2; one connection per endpoint
//     multiplexes every call. An Ack with ok true acknowledges.
//   - TCP: varint-length-delimited Delivery frames on Config.TCPConns
//     pipelined connections per endpoint; a writer goroutine per
//     connection batches frames into one write, a reader matches the Ack
//     frames, in any order, by delivery id. A connection that breaks fails
//     the attempts awaiting its Acks. A failed dial puts the endpoint in a
//     backoff (RedialMin doubling to RedialMax, jittered) during which its
//     attempts fail at once rather than wait.
//   - UDP: one datagram holding a Delivery per attempt, from a connected
//     socket per endpoint. There is no answer: an attempt succeeds once
//     the datagram is sent, so UDP is at most once. A payload over
//     MaxUDPPayload is refused (ValidateCallback says so at registration).
//   - NATS: a JetStream publish to the endpoint's subject
//     (nats://host:port/subject, where {group} stands for the task's
//     group) over one connection per server; the stream's acknowledgement
//     is success. Nats-Msg-Id is the task id and the occurrence's due
//     time, so the stream drops a retry of an occurrence it already
//     stored.
//   - AMQP: a persistent, mandatory publish to RabbitMQ
//     (amqp://host:port/vhost?exchange=…&routing_key=…, {group} again
//     allowed in the routing key) on a few confirm-mode channels per
//     connection; the broker's confirm is success, a nack or a return (no
//     queue took the message) is a rejection. message_id is the same
//     occurrence id.
//   - ACTIVEMQ: a persistent STOMP 1.2 SEND with a receipt request to
//     ActiveMQ Classic (activemq://host:port/queue/NAME or /topic/NAME,
//     {group} allowed), pipelined on one connection per broker; the
//     receipt is success, an ERROR frame about the message a rejection.
//     The group travels as JMSXGroupID (ActiveMQ's message groups), the
//     occurrence id as Boomerang-Message-Id.
//   - SQS: SendMessage or SendMessageBatch to an SQS FIFO queue with the
//     AWS SDK (sqs://HOST/ACCOUNT/NAME.fifo or sqs://REGION/NAME.fifo),
//     MessageGroupId the group (or the task id), MessageDeduplicationId
//     the occurrence id; attempts waiting for one queue share batches.
//     Validation errors are permanent, everything else is retried.
//
// Queue messages carry the webhook's Boomerang-* headers (not the
// signature); a broker that cannot be reached is put in the same dial
// backoff as a raw TCP endpoint. sink.go parses the NATS and AMQP
// endpoints, activemq.go and sqs.go their own.
//
// Every transport carries the attempt's term (scheduler.Delivery.Term),
// the fencing token receivers use to drop a replaced leader's late
// deliveries: HTTP in the signed Boomerang-Term header, the others in
// Delivery.term.
//
// Idle connections are closed after Config.IdleTimeout.
//
// # Callback policy
//
// With Config.Egress, an attempt's endpoint is checked before the attempt
// is made, against the server's policy narrowed by the client's own rules
// (Details.Rules), and every connection the transports open is checked
// again after DNS resolution, address by address (egress.Dialer). A
// denied destination fails the attempt for good. When Config.Clients
// implements ClientDetails, it also gives the signing secrets: during a
// rotation, every secret not yet expired signs each webhook.
//
// # Failures and retries
//
// Every failure is an error the scheduler records as the task's last
// error and passes to Next. Next decides with the effective retry policy
// (the task's fields over the client's over Config.DefaultRetry): stop
// once max attempts are used, else wait Backoff (fixed or exponential,
// capped at the max interval, shortened by up to jitter). Some failures
// stop at once, whatever attempts are left, because no retry can fix
// them (IsPermanent): HTTP 3xx and 4xx other than 408, 425 and 429; gRPC
// Unimplemented, InvalidArgument, Unauthenticated and PermissionDenied;
// an unknown client; no usable callback. A 429 or 503 with Retry-After
// waits at least that long (capped at the max interval). ErrPoolFull,
// ErrClosed and a client that cannot be read now (a node whose copy of
// the clients is catching up) say nothing about the endpoint: they are
// local refusals
// (scheduler.ErrNotAttempted), which the scheduler tries again after its
// RefusalDelay without counting an attempt or advancing the backoff.
//
// Error texts from receivers (response bodies, Ack errors, gRPC status
// messages) are cut to their first line, made valid UTF-8 without control
// characters, and bounded (package sanitize) before they reach the
// scheduler, whatever the receiver sends.
//
// # Dispatch pools
//
// A pool bounds the attempts under way (MaxConcurrent) and started per
// second (MaxPerSecond, a token bucket), and queues the rest up to
// MaxQueued; beyond that an attempt fails at once with ErrPoolFull. Within
// a pool, queued attempts wait per endpoint and endpoints take turns, and
// an endpoint may hold at most an equal share of the pool's slots while
// others wait: a slow endpoint is bounded by its share and its timeout,
// and cannot starve the others. Pools are named in Config.Pools and by
// callbacks; DefaultPool always exists.
//
// # Metrics
//
// With Config.Registerer: boomerang_delivery_attempts_total by protocol
// and outcome; boomerang_delivery_latency_seconds by protocol;
// boomerang_delivery_retries_total; boomerang_delivery_final_failures_total
// by reason (permanent, exhausted); boomerang_delivery_dial_failures_total;
// and per pool boomerang_delivery_pool_limit, _in_use, _queued,
// _saturation and _rejected_total. Dead letters and blocked groups are
// the scheduler's.
//
// # Closing
//
// Close refuses new attempts, fails queued ones with ErrClosed, waits for
// those under way, then closes every connection. Stop the scheduler
// first: its Stop waits for the attempts under way, and an attempt that
// ends with ErrClosed is retried after a restart like any other.
package delivery

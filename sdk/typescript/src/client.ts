import { connect as netConnect, type Socket } from "node:net";
import { create } from "@bufbuild/protobuf";
import { sizeDelimitedEncode, sizeDelimitedPeek } from "@bufbuild/protobuf/wire";
import { RequestSchema, Status, type Request, type Response } from "./gen/api/boomerang/v1/boomerang_pb.js";
import {
  BoomerangApi,
  type Credentials,
  type Logger,
  type Operation,
  type RequestOf,
  type ResponseOf,
  type Session,
} from "./api.js";
import { bodyOf } from "./body.js";
import { BoomerangError, ClientClosedError, InvalidRequestError, messageOf } from "./errors.js";
import { Connection } from "./connection.js";
import { Peers } from "./peers.js";
import { registerTasks } from "./routebatch.js";
import { Router } from "./router.js";
import { Slots, abortable, deferred, sleep, type Deferred } from "./wait.js";

/** Defaults for options left out. */
export const clientDefaults = {
  /** Bounds one attempt to open the TCP connection. */
  dialTimeoutMs: 5_000,
  /** Shortest and longest wait between reconnection attempts; the wait doubles, with jitter. */
  reconnectMinMs: 100,
  reconnectMaxMs: 5_000,
  /** Requests sent and not yet answered; further calls wait for a slot. */
  maxInFlight: 8_192,
  /** The largest response frame read, in bytes. */
  maxResponseBytes: 64 << 20,
} as const;

/** Options of dial. */
export interface ClientOptions {
  /** Logs in with these, at dial and whenever the session is refused. */
  credentials?: Credentials;
  /** Uses an existing session instead of logging in at dial. */
  session?: Session;
  /** Default clientDefaults.dialTimeoutMs. */
  dialTimeoutMs?: number;
  /** Default clientDefaults.reconnectMinMs. */
  reconnectMinMs?: number;
  /** Default clientDefaults.reconnectMaxMs. */
  reconnectMaxMs?: number;
  /** Default clientDefaults.maxInFlight. */
  maxInFlight?: number;
  /** Default clientDefaults.maxResponseBytes. */
  maxResponseBytes?: number;
  /**
   * Against a cluster, sends each request to its shard's leader, over a
   * connection of its own to that node (see README.md, "Clusters"). Default
   * true; false leaves every request to the node dialed, which forwards it.
   */
  routing?: boolean;
  /** Where connection changes and refresh failures are logged. Default: nowhere. */
  logger?: Logger;
  /** Bounds dial only; the client lives until close. */
  signal?: AbortSignal;
}

/**
 * Connects to the server at address ("host:port") over raw TCP. With
 * credentials it logs in; with a session it adopts it instead. Either way
 * it then asks for the server's limits, which also proves the session
 * works. Without either it only connects: call login.
 */
export async function dial(address: string, options: ClientOptions = {}): Promise<Client> {
  const client = new Client(address, options);
  try {
    await client.start(options.signal);
  } catch (err) {
    client.close();
    throw err;
  }
  return client;
}

/**
 * Client is a connection to a Boomerang server over raw TCP, made by dial.
 * Calls share its one connection and are pipelined on it: each request
 * carries its own id, the server answers in any order, and requests made in
 * the same tick leave in one write.
 *
 * The client refreshes its session before it expires and logs in again when
 * the server refuses it. When the connection breaks, the requests in
 * flight fail with ConnectionLostError (they may or may not have taken
 * effect: use idempotency keys to retry safely), and the client reconnects
 * in the background with exponential backoff; calls made meanwhile wait
 * for the new connection. Close it when done: until then it keeps the
 * process alive.
 *
 * Against a cluster it sends each request to its shard's leader over a
 * connection of its own to that node, with the same session, and follows
 * the nodes' NOT_LEADER answers (see the Router); routing: false turns
 * that off.
 */
export class Client extends BoomerangApi {
  readonly address: string;
  readonly #opts: Required<Omit<ClientOptions, "credentials" | "session" | "logger" | "signal" | "routing">>;
  readonly #slots: Slots;
  #nextId = 1n;
  #maxFrame = 0;

  #current: Connection | undefined;
  #ready: Deferred<void> = deferred();
  #dialError: unknown;
  #closed = false;
  readonly #life = new AbortController();
  #refreshTimer: NodeJS.Timeout | undefined;
  readonly #peers: Peers | undefined;
  readonly #router: Router | undefined;

  /** Use dial. */
  constructor(address: string, options: ClientOptions) {
    super(options.credentials, options.session, options.logger);
    splitAddress(address); // fails early on a bad address
    this.address = address;
    this.#opts = {
      dialTimeoutMs: options.dialTimeoutMs ?? clientDefaults.dialTimeoutMs,
      reconnectMinMs: options.reconnectMinMs ?? clientDefaults.reconnectMinMs,
      reconnectMaxMs: Math.max(options.reconnectMaxMs ?? clientDefaults.reconnectMaxMs, options.reconnectMinMs ?? clientDefaults.reconnectMinMs),
      maxInFlight: options.maxInFlight ?? clientDefaults.maxInFlight,
      maxResponseBytes: options.maxResponseBytes ?? clientDefaults.maxResponseBytes,
    };
    this.#slots = new Slots(this.#opts.maxInFlight);
    if (options.routing ?? true) {
      this.#peers = new Peers((addr, signal) => this.#dial(addr, signal), this.#opts.maxResponseBytes, this.log);
      this.#router = new Router({
        sessionId: () => this.session?.id ?? "",
        exchange: (request, addr, signal) => this.#exchange(request, addr, signal),
        life: this.#life.signal,
        fetchTimeoutMs: this.#opts.dialTimeoutMs,
        log: this.log,
      });
    }
  }

  /** Connects, logs in or adopts the session, and reads the server's limits; dial calls it. */
  async start(signal: AbortSignal | undefined): Promise<void> {
    this.#install(await this.#dial(this.address, signal));
    this.sessionChanged();
    if (this.session === undefined && this.credentials === undefined) {
      return;
    }
    if (this.session === undefined) {
      await this.login({ clientId: this.credentials!.clientId, password: this.credentials!.password }, signal && { signal });
    }
    const info = await this.getServerInfo({}, signal && { signal });
    this.#maxFrame = Number(info.maxFrameBytes);
  }

  /**
   * Closes the connection. Calls in flight fail with ConnectionLostError
   * (caused by ClientClosedError); later calls fail with ClientClosedError.
   * Idempotent.
   */
  close(): void {
    if (this.#closed) {
      return;
    }
    this.#closed = true;
    this.#life.abort(new ClientClosedError());
    clearTimeout(this.#refreshTimer);
    const cur = this.#current;
    this.#current = undefined;
    this.#ready.reject(new ClientClosedError());
    cur?.fail(new ClientClosedError());
    this.#peers?.close();
  }

  /** The frame limit the server gave at start; 0 when it has not been asked. */
  protected override async frameLimit(): Promise<number> {
    return this.#maxFrame;
  }

  protected override async send<K extends Operation>(op: K, request: RequestOf<K>, sessionId: string, signal: AbortSignal | undefined): Promise<ResponseOf<K>> {
    await this.#slots.acquire(signal);
    try {
      if (this.#router === undefined) {
        const envelope = create(RequestSchema, { sessionId, body: { case: op, value: request } as Request["body"] });
        return bodyOf(op, await this.#exchange(envelope, "", signal));
      }
      if (op === "registerTasks") {
        const withSession = <T>(s: AbortSignal | undefined, f: (id: string) => Promise<T>) => this.withSession(s, f);
        return (await registerTasks(this.#router, request as RequestOf<"registerTasks">, sessionId, signal, withSession)) as ResponseOf<K>;
      }
      return bodyOf(op, await this.#router.roundTrip(op, request, sessionId, signal));
    } finally {
      this.#slots.release();
    }
  }

  /**
   * Sends one request envelope, with a new request id, over the connection
   * to the node at address ("": the client's own) and returns the response
   * envelope.
   */
  async #exchange(request: Request, address: string, signal: AbortSignal | undefined): Promise<Response> {
    const id = this.#nextId++;
    request.requestId = id;
    const frame = sizeDelimitedEncode(RequestSchema, request);
    if (this.#maxFrame > 0) {
      const size = frame.length - sizeDelimitedPeek(frame).offset!;
      if (size > this.#maxFrame) {
        // The server would close the connection, failing every request on it.
        throw new InvalidRequestError(Status.INVALID_REQUEST, `the request is ${size} bytes; the server takes frames of at most ${this.#maxFrame} bytes`, "payload");
      }
    }
    for (;;) {
      const conn = address === "" ? await this.#connection(signal) : await this.#peers!.get(address, signal);
      const pending = conn.send(id, frame);
      if (pending === undefined) {
        continue; // never written: it may go out on the next connection
      }
      return abortable(pending, signal, () => conn.abandon(id));
    }
  }

  /** The current connection, waiting for a reconnection if needed. */
  async #connection(signal: AbortSignal | undefined): Promise<Connection> {
    for (;;) {
      if (this.#closed) {
        throw new ClientClosedError();
      }
      if (this.#current !== undefined) {
        return this.#current;
      }
      try {
        await abortable(this.#ready.promise, signal);
      } catch (err) {
        if (this.#dialError !== undefined && !(err instanceof ClientClosedError)) {
          throw new Error(`not connected (${messageOf(this.#dialError)}): ${messageOf(err)}`, { cause: err });
        }
        throw err;
      }
    }
  }

  /** Opens a TCP connection to the node at address ("host:port"). */
  #dial(address: string, signal: AbortSignal | undefined): Promise<Socket> {
    const [host, port] = splitAddress(address);
    const timeout = AbortSignal.timeout(this.#opts.dialTimeoutMs);
    const bound = signal === undefined ? AbortSignal.any([timeout, this.#life.signal]) : AbortSignal.any([timeout, this.#life.signal, signal]);
    return new Promise<Socket>((resolve, reject) => {
      const socket = netConnect({ host, port, noDelay: true });
      const onAbort = () => {
        socket.destroy();
        reject(new Error(`cannot connect to ${address}: ${messageOf(bound.reason)}`, { cause: bound.reason }));
      };
      if (bound.aborted) {
        onAbort();
        return;
      }
      bound.addEventListener("abort", onAbort, { once: true });
      socket.once("connect", () => {
        bound.removeEventListener("abort", onAbort);
        socket.removeAllListeners("error");
        resolve(socket);
      });
      socket.once("error", (err) => {
        bound.removeEventListener("abort", onAbort);
        reject(new Error(`cannot connect to ${address}: ${err.message}`, { cause: err }));
      });
    });
  }

  #install(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    this.#current = new Connection(socket, this.#opts.maxResponseBytes, (conn, cause, inFlight) => this.#lost(conn, cause, inFlight));
    this.#dialError = undefined;
    this.#ready.resolve();
  }

  /** A connection failed: unless closing, reconnect in the background. */
  #lost(conn: Connection, cause: Error, inFlight: number): void {
    if (this.#closed || this.#current !== conn) {
      return;
    }
    this.#current = undefined;
    this.#ready = deferred();
    if (inFlight > 0) {
      this.log.warn("boomerang: connection lost; reconnecting", { address: this.address, error: cause.message, failedRequests: inFlight });
    } else {
      this.log.info("boomerang: connection closed; reconnecting", { address: this.address, error: cause.message });
    }
    void this.#reconnect();
  }

  /** Dials with exponential backoff and jitter until it works or the client closes. */
  async #reconnect(): Promise<void> {
    let wait = this.#opts.reconnectMinMs;
    for (let attempt = 1; !this.#closed; attempt++) {
      try {
        await sleep(wait / 2 + Math.random() * (wait / 2), this.#life.signal);
        const socket = await this.#dial(this.address, undefined);
        this.log.info("boomerang: reconnected", { address: this.address, attempts: attempt });
        this.#install(socket);
        return;
      } catch (err) {
        if (this.#closed) {
          return;
        }
        this.#dialError = err;
        wait = Math.min(2 * wait, this.#opts.reconnectMaxMs);
      }
    }
  }

  protected override sessionChanged(): void {
    clearTimeout(this.#refreshTimer);
    if (!this.#closed) {
      this.#planRefresh(this.refreshDue(Date.now()));
    }
  }

  #planRefresh(wait: number | undefined): void {
    if (wait === undefined) {
      return;
    }
    this.#refreshTimer = setTimeout(() => void this.#refresh(), wait);
  }

  async #refresh(): Promise<void> {
    try {
      await this.refreshOnce(AbortSignal.any([this.#life.signal, AbortSignal.timeout(10_000)]));
    } catch (err) {
      if (this.#closed) {
        return;
      }
      if (statusIs(err, Status.SESSION_EXPIRED, Status.UNAUTHORIZED)) {
        // Nothing to retry until someone logs in.
        this.log.warn("boomerang: session refresh refused; waiting for a new login", { error: messageOf(err) });
        return;
      }
      const left = (this.session?.expiresAt.getTime() ?? 0) - Date.now();
      const retry = Math.min(Math.max(left / 10, 100), 30_000);
      this.log.warn("boomerang: session refresh failed", { error: messageOf(err), retryInMs: retry });
      this.#planRefresh(retry);
    }
  }
}

function statusIs(err: unknown, ...statuses: Status[]): boolean {
  return err instanceof BoomerangError && statuses.includes(err.status);
}

/** Splits "host:port" or "[v6]:port". */
function splitAddress(address: string): [string, number] {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
  if (m === null) {
    throw new Error(`bad address ${JSON.stringify(address)}: want host:port`);
  }
  return [m[1] ?? m[2] ?? "", Number(m[3])];
}

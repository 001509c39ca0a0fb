import { create } from "@bufbuild/protobuf";
import { RequestSchema, Status, type NotLeader, type Request, type Response } from "./gen/api/boomerang/v1/boomerang_pb.js";
import type { Logger, Operation, RequestOf } from "./api.js";
import { ConnectionLostError, ProtocolError, errorFromWire, messageOf } from "./errors.js";
import { NotSentError } from "./peers.js";
import { Routes, repeatable, routable } from "./routes.js";
import { sleep } from "./wait.js";

/**
 * Routing bounds: a request is sent at most maxAttempts times and, once
 * windowMs has passed since its first attempt, once more only; the last
 * attempt goes through the client's own connection without route, so that
 * its node forwards it as it would for a client that does not route.
 * Before an attempt that follows a NOT_LEADER naming no leader, a node that
 * cannot be reached or a BUSY answer (a shard changing leaders: an election
 * takes a second or two) it waits backoffMs, doubling up to maxBackoffMs. A
 * failed fetch of the view is tried again after fetchRetryMs at the soonest.
 */
export const routeLimits = {
  maxAttempts: 32,
  windowMs: 10_000,
  backoffMs: 20,
  maxBackoffMs: 500,
  fetchRetryMs: 1_000,
} as const;

/** What a router needs of its client. */
export interface RouterHost {
  /** The session id requests carry now. */
  sessionId(): string;
  /**
   * Sends one request envelope (its id is set here) to the node at address,
   * or over the client's own connection for "", and returns the response
   * envelope. Throws NotSentError when that node cannot be reached,
   * ConnectionLostError when the connection broke with the request in flight.
   */
  exchange(request: Request, address: string, signal: AbortSignal | undefined): Promise<Response>;
  /** Aborts when the client closes. */
  readonly life: AbortSignal;
  /** Bounds a background fetch of the view. */
  readonly fetchTimeoutMs: number;
  readonly log: Logger;
}

/**
 * Router sends requests straight to their shards' leaders, as docs/cluster.md
 * ("Routing") describes: the view is fetched before the first request that
 * can be routed, and refreshed when a node says it moved on.
 */
export class Router {
  readonly host: RouterHost;
  #view: Routes | undefined;
  #first: Promise<Routes | undefined> | undefined;
  #failedAt = -Infinity; // of the last failed first fetch
  #refreshing = false;
  #spread = 0;

  constructor(host: RouterHost) {
    this.host = host;
  }

  /**
   * Sends a request to its shard's leader and returns the response. A
   * NOT_LEADER answer sends it on to the leader named, a node that cannot be
   * reached sends it through the client's own connection, and a connection
   * that broke with it in flight, or a BUSY answer, sends it again if it is
   * repeatable; meanwhile the view is refreshed. None of these reach the
   * caller, within routeLimits.
   */
  async roundTrip<K extends Operation>(op: K, request: RequestOf<K>, sessionId: string, signal: AbortSignal | undefined): Promise<Response> {
    const view = await this.viewFor(op, signal);
    const envelope = (route: boolean) => create(RequestSchema, { sessionId, route, body: { case: op, value: request } as Request["body"] });
    if (view === undefined) {
      return this.host.exchange(envelope(false), "", signal);
    }
    let addr = view.target(op, request, this.#spread++);
    const until = Date.now() + routeLimits.windowMs;
    let wait: number = routeLimits.backoffMs;
    for (let attempt = 1; ; attempt++) {
      const last = attempt === routeLimits.maxAttempts || Date.now() > until;
      if (last) {
        return this.host.exchange(envelope(false), "", signal);
      }
      let resp: Response | undefined;
      let err: unknown;
      try {
        resp = await this.host.exchange(envelope(true), addr, signal);
      } catch (e) {
        err = e;
      }
      const status = resp?.error?.status;
      let home = false; // the next attempt goes through the client's own connection
      if (status === Status.NOT_LEADER) {
        addr = this.#learn(resp!.error!.notLeader);
        if (addr !== "") {
          continue;
        }
      } else if (err instanceof NotSentError || (err instanceof ConnectionLostError && repeatable(op, request))) {
        // The node cannot be reached, or went: the node dialed can, though
        // it may still name the other one for a while.
        home = true;
      } else if (status !== Status.BUSY || !repeatable(op, request)) {
        if (err instanceof ConnectionLostError) {
          this.refreshSoon();
        }
        if (resp === undefined) {
          throw err;
        }
        return resp;
      }
      this.refreshSoon();
      await sleep(wait, signal === undefined ? this.host.life : AbortSignal.any([signal, this.host.life]));
      wait = Math.min(2 * wait, routeLimits.maxBackoffMs);
      addr = home ? "" : (this.#view ?? view).target(op, request, this.#spread++);
    }
  }

  /**
   * The view to route a request by, fetching the first one, or undefined
   * when the request goes through the client's own connection as it is: it
   * cannot be routed, the server is standalone, or no view is known.
   */
  async viewFor(op: Operation, signal: AbortSignal | undefined): Promise<Routes | undefined> {
    if (!routable(op) && op !== "registerTasks") {
      return undefined;
    }
    const v = this.#view ?? (await this.#firstView(signal));
    return v === undefined || v.standalone ? undefined : v;
  }

  /** Fetches the first view, once at a time, and not again within fetchRetryMs of a failure. */
  #firstView(signal: AbortSignal | undefined): Promise<Routes | undefined> {
    if (this.#first !== undefined) {
      return this.#first;
    }
    if (Date.now() - this.#failedAt < routeLimits.fetchRetryMs) {
      return Promise.resolve(undefined);
    }
    this.#first = this.fetch(signal)
      .then(
        () => this.#view,
        (err: unknown) => {
          this.#failedAt = Date.now();
          this.host.log.warn("boomerang: fetching the routing view failed; requests go through the node dialed", { error: messageOf(err) });
          return undefined;
        },
      )
      .finally(() => (this.#first = undefined));
    return this.#first;
  }

  /**
   * Asks the client's node for the routing view. It takes no request slot:
   * the requests waiting for the view may hold them all. A server that does
   * not know GetRoutes does not route: it is standalone for the client.
   */
  async fetch(signal: AbortSignal | undefined): Promise<void> {
    const req = create(RequestSchema, { sessionId: this.host.sessionId(), body: { case: "getRoutes", value: {} } });
    const resp = await this.host.exchange(req, "", signal);
    if (resp.error !== undefined) {
      if (resp.error.status === Status.INVALID_REQUEST && resp.error.field === "body") {
        this.#view ??= Routes.standaloneServer();
        return;
      }
      throw errorFromWire(resp.error);
    }
    if (resp.body.case !== "getRoutes") {
      throw new ProtocolError("the response to GetRoutes has no body");
    }
    const next = Routes.of(resp.body.value);
    if (this.#view === undefined || next.revision >= this.#view.revision) {
      this.#view = next;
    }
  }

  /**
   * Keeps a NOT_LEADER hint until the next view, asks for that view when the
   * hint is newer than the one held, and returns where to send the request
   * next ("" when the hint names no leader).
   */
  #learn(hint: NotLeader | undefined): string {
    const v = this.#view!;
    const addr = hint?.leaderTcpAddress ?? "";
    if (hint === undefined || addr === "" || hint.revision > v.revision) {
      this.refreshSoon();
    }
    if (hint === undefined || addr === "" || hint.leaderId === v.self) {
      return "";
    }
    this.#view = v.withLeader(hint);
    return addr;
  }

  /** Fetches the view in the background, unless a fetch runs. */
  refreshSoon(): void {
    if (this.#refreshing || this.host.life.aborted) {
      return;
    }
    this.#refreshing = true;
    this.fetch(AbortSignal.any([this.host.life, AbortSignal.timeout(this.host.fetchTimeoutMs)]))
      .catch((err: unknown) => {
        if (!this.host.life.aborted) {
          this.host.log.info("boomerang: refreshing the routing view failed", { error: messageOf(err) });
        }
      })
      .finally(() => (this.#refreshing = false));
  }

  /** The view held now, if any. */
  get view(): Routes | undefined {
    return this.#view;
  }
}

import type { Socket } from "node:net";
import { ClientClosedError, messageOf } from "./errors.js";
import { Connection } from "./connection.js";
import type { Logger } from "./api.js";

/**
 * NotSentError: a node could not be reached, so a request for it was not
 * sent. It may go elsewhere.
 */
export class NotSentError extends Error {
  constructor(address: string, cause: unknown) {
    super(`not sent: node ${address} cannot be reached: ${messageOf(cause)}`, { cause });
    this.name = "NotSentError";
  }
}

/** One other node: its connection, or the dial under way. */
interface Peer {
  conn: Connection | undefined;
  dialing: Promise<Connection> | undefined;
}

/**
 * Peers holds a routing client's connections to the nodes other than the
 * one it dialed, each dialed when first needed and again after it breaks.
 * Requests carry the client's session: sessions are valid on every node.
 */
export class Peers {
  readonly #dial: (address: string, signal: AbortSignal | undefined) => Promise<Socket>;
  readonly #maxResponseBytes: number;
  readonly #log: Logger;
  readonly #peers = new Map<string, Peer>();
  #closed = false;

  constructor(dial: (address: string, signal: AbortSignal | undefined) => Promise<Socket>, maxResponseBytes: number, log: Logger) {
    this.#dial = dial;
    this.#maxResponseBytes = maxResponseBytes;
    this.#log = log;
  }

  /** The connection to the node at address, dialing it if there is none. A dial that fails throws NotSentError. */
  async get(address: string, signal: AbortSignal | undefined): Promise<Connection> {
    if (this.#closed) {
      throw new ClientClosedError();
    }
    let p = this.#peers.get(address);
    if (p === undefined) {
      p = { conn: undefined, dialing: undefined };
      this.#peers.set(address, p);
    }
    if (p.conn !== undefined) {
      return p.conn;
    }
    p.dialing ??= this.#open(p, address, signal).finally(() => (p.dialing = undefined));
    return p.dialing;
  }

  async #open(p: Peer, address: string, signal: AbortSignal | undefined): Promise<Connection> {
    let socket: Socket;
    try {
      socket = await this.#dial(address, signal);
    } catch (err) {
      throw new NotSentError(address, err);
    }
    if (this.#closed) {
      socket.destroy();
      throw new ClientClosedError();
    }
    const conn = new Connection(socket, this.#maxResponseBytes, (lost, cause, inFlight) => {
      if (p.conn === lost) {
        p.conn = undefined;
      }
      if (inFlight > 0 && !this.#closed) {
        this.#log.warn("boomerang: connection to a node lost", { address, error: cause.message, failedRequests: inFlight });
      }
    });
    p.conn = conn;
    return conn;
  }

  /** Closes every connection; requests in flight on them fail. */
  close(): void {
    this.#closed = true;
    for (const p of this.#peers.values()) {
      p.conn?.fail(new ClientClosedError());
    }
    this.#peers.clear();
  }
}

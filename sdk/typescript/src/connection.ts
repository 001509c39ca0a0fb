import type { Socket } from "node:net";
import { ResponseSchema, type Error as WireError, type Response } from "./gen/api/boomerang/v1/boomerang_pb.js";
import { ConnectionLostError, errorFromWire } from "./errors.js";
import { FrameDecoder } from "./frames.js";
import { batchWriter } from "./socket.js";

/** A request waiting for its response. */
interface Pending {
  resolve(response: Response): void;
  reject(err: Error): void;
}

/**
 * Connection is one TCP connection to the server. Frames written in the
 * same tick leave in one write; responses are matched to their requests by id, in whatever order they
 * come.
 */
export class Connection {
  readonly #socket: Socket;
  readonly #pending = new Map<bigint, Pending>();
  readonly #lost: (conn: Connection, cause: Error, inFlight: number) => void;
  readonly #write: (frame: Uint8Array) => void;
  #failed: Error | undefined;
  #farewell: WireError | undefined;

  constructor(socket: Socket, maxResponseBytes: number, lost: (conn: Connection, cause: Error, inFlight: number) => void) {
    this.#socket = socket;
    this.#lost = lost;
    this.#write = batchWriter(socket);
    const decoder = new FrameDecoder(ResponseSchema, maxResponseBytes);
    socket.on("data", (chunk: Buffer) => {
      try {
        decoder.push(chunk, (r) => this.#received(r));
      } catch (err) {
        this.fail(err as Error);
      }
    });
    socket.on("end", () => {
      try {
        decoder.end();
        this.fail(new Error("the server closed the connection"));
      } catch (err) {
        this.fail(err as Error);
      }
    });
    socket.on("error", (err) => this.fail(err));
    socket.on("close", () => this.fail(new Error("connection closed")));
  }

  #received(r: Response): void {
    if (r.requestId === 0n) {
      // A connection error: the server closes the connection next.
      this.#farewell = r.error;
      return;
    }
    const p = this.#pending.get(r.requestId);
    if (p !== undefined) {
      this.#pending.delete(r.requestId);
      p.resolve(r);
    }
  }

  /**
   * Sends a framed request and resolves with its response. Returns
   * undefined, without sending, if the connection has already failed: the
   * request may then go out on the next one.
   */
  send(id: bigint, frame: Uint8Array): Promise<Response> | undefined {
    if (this.#failed !== undefined) {
      return undefined;
    }
    const response = new Promise<Response>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.#write(frame);
    return response;
  }

  /** Forgets a request whose caller stopped waiting; a late response is dropped. */
  abandon(id: bigint): void {
    this.#pending.delete(id);
  }

  /**
   * Closes the connection and fails every request waiting on it with
   * ConnectionLostError. Only the first cause counts; when the server said
   * why it closed the connection, that is the cause.
   */
  fail(cause: Error): void {
    if (this.#failed !== undefined) {
      return;
    }
    this.#failed = this.#farewell !== undefined ? errorFromWire(this.#farewell) : cause;
    this.#socket.destroy();
    const waiting = [...this.#pending.values()];
    this.#pending.clear();
    const lost = new ConnectionLostError(this.#failed);
    for (const p of waiting) {
      p.reject(lost);
    }
    this.#lost(this, this.#failed, waiting.length);
  }
}

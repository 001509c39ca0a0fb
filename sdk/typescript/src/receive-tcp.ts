import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { create } from "@bufbuild/protobuf";
import { sizeDelimitedEncode } from "@bufbuild/protobuf/wire";
import { AckSchema, DeliverySchema, type Ack, type Delivery } from "./gen/api/boomerang/v1/boomerang_pb.js";
import type { Logger } from "./api.js";
import { messageOf } from "./errors.js";
import { FrameDecoder } from "./frames.js";
import { defaultMaxDelivery, type Handler } from "./receiver.js";
import { batchWriter } from "./socket.js";

/** How long a closing connection waits for the server to close its side. */
const lingerMs = 1_000;

/** Handlers a TCP connection runs at once by default. */
export const defaultReceiverInFlight = 256;

/** Configures a TCPReceiver. */
export interface TCPReceiverConfig {
  /** Receives each delivery. Required. */
  handler: Handler;
  /** Bounds a Delivery frame, in bytes; a larger one closes the connection. Default 16 MiB + 64 KiB. */
  maxFrame?: number;
  /**
   * Bounds the handlers running at once per connection; beyond it the
   * connection is not read until one ends. Default defaultReceiverInFlight.
   */
  maxInFlight?: number;
  /** Receives one line per connection that ends in error. Default: nowhere. */
  logger?: Logger;
}

/**
 * TCPReceiver receives deliveries over raw TCP: the server connects to it
 * and sends varint-length-delimited Delivery frames, many at a time on one
 * connection; the receiver runs the handler for each, concurrently, and
 * answers each with an Ack frame carrying its delivery id as soon as the
 * handler settles, in whatever order handlers finish. Acks ready in the
 * same tick leave in one write.
 *
 *     const receiver = new TCPReceiver({ handler });
 *     const { port } = await receiver.listen(9000, "0.0.0.0");
 *     ...
 *     await receiver.close();
 */
export class TCPReceiver {
  readonly server: Server;
  readonly #handler: Handler;
  readonly #maxFrame: number;
  readonly #maxInFlight: number;
  readonly #log: Logger | undefined;
  readonly #conns = new Set<ReceiverConnection>();
  #closing = false;

  constructor(config: TCPReceiverConfig) {
    if (typeof config.handler !== "function") {
      throw new Error("TCPReceiver: handler is required");
    }
    if ((config.maxFrame ?? 0) < 0 || (config.maxInFlight ?? 0) < 0) {
      throw new Error("TCPReceiver: maxFrame and maxInFlight must not be negative");
    }
    this.#handler = config.handler;
    this.#maxFrame = config.maxFrame || defaultMaxDelivery + (64 << 10);
    this.#maxInFlight = config.maxInFlight || defaultReceiverInFlight;
    this.#log = config.logger;
    this.server = createServer((socket) => this.accept(socket));
  }

  /** Starts listening; port 0 picks a free port. Resolves with the bound address. */
  listen(port: number, host = "127.0.0.1"): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /** Serves a connection accepted elsewhere. */
  accept(socket: Socket): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    const c = new ReceiverConnection(socket, this.#handler, this.#maxFrame, this.#maxInFlight, this.#log);
    this.#conns.add(c);
    void c.done.then(() => this.#conns.delete(c));
  }

  /**
   * Stops accepting connections and reading deliveries, waits for the
   * handlers under way and their acks to be written, and closes the
   * connections. Deliveries the server sent that were not read fail on its
   * side and are retried. After timeoutMs, handlers' signals abort and
   * connections are cut; close still waits for the handlers to settle, then
   * rejects.
   */
  async close(timeoutMs = 30_000): Promise<void> {
    this.#closing = true;
    this.server.close();
    const conns = [...this.#conns];
    for (const c of conns) {
      c.stop();
    }
    const all = Promise.all(conns.map((c) => c.done));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs)));
    const late = await Promise.race([all.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late) {
      for (const c of conns) {
        c.cut();
      }
      await all;
      throw new Error(`TCPReceiver: close timed out after ${timeoutMs} ms; connections were cut`);
    }
  }
}

/** One connection from the server. */
class ReceiverConnection {
  readonly done: Promise<void>;
  readonly #socket: Socket;
  readonly #handler: Handler;
  readonly #maxInFlight: number;
  readonly #abort = new AbortController();
  readonly #write: (frame: Uint8Array) => void;
  #inFlight = 0;
  #reading = true;
  #ended = false;
  #finish!: () => void;

  constructor(socket: Socket, handler: Handler, maxFrame: number, maxInFlight: number, log: Logger | undefined) {
    this.#socket = socket;
    this.#handler = handler;
    this.#maxInFlight = maxInFlight;
    this.#write = batchWriter(socket);
    this.done = new Promise((resolve) => (this.#finish = resolve));
    const decoder = new FrameDecoder(DeliverySchema, maxFrame);
    const hungUp = (err?: Error) => {
      // Nobody will read the acks of the handlers still running.
      if (err !== undefined && this.#reading) {
        log?.warn("boomerang: callback connection closed", { remote: socket.remoteAddress, error: messageOf(err) });
      }
      this.#reading = false;
      this.#abort.abort(err ?? new Error("the server closed the connection"));
      this.#settleIfIdle();
    };
    socket.on("data", (chunk: Buffer) => {
      try {
        decoder.push(chunk, (d) => this.#start(d));
      } catch (err) {
        hungUp(err as Error);
        socket.destroy();
      }
    });
    socket.on("end", () => hungUp());
    socket.on("error", (err) => hungUp(err));
    socket.on("close", () => {
      hungUp();
      this.#finish();
    });
  }

  #start(d: Delivery): void {
    if (!this.#reading) {
      return;
    }
    this.#inFlight++;
    if (this.#inFlight >= this.#maxInFlight) {
      this.#socket.pause();
    }
    void this.#run(d);
  }

  async #run(d: Delivery): Promise<void> {
    const ack: Ack = create(AckSchema, { deliveryId: d.deliveryId, ok: true });
    try {
      await this.#handler(d, this.#abort.signal);
    } catch (err) {
      ack.ok = false;
      ack.error = messageOf(err);
    }
    this.#inFlight--;
    if (!this.#socket.destroyed) {
      this.#write(sizeDelimitedEncode(AckSchema, ack));
    }
    if (this.#reading && this.#inFlight < this.#maxInFlight) {
      this.#socket.resume();
    }
    this.#settleIfIdle();
  }

  /**
   * Closes the connection once reading has stopped and every ack is out.
   * What the server still sends is drained, not left unread: closing a
   * socket with unread input resets it, which can destroy acks the server
   * has not read yet.
   */
  #settleIfIdle(): void {
    if (this.#reading || this.#inFlight > 0 || this.#ended) {
      return;
    }
    this.#ended = true;
    this.#socket.removeAllListeners("data");
    this.#socket.resume();
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), lingerMs).unref();
  }

  /** Stops reading; the connection closes after the handlers under way. */
  stop(): void {
    this.#reading = false;
    this.#socket.pause();
    this.#settleIfIdle();
  }

  /** Aborts the handlers and closes the connection at once. */
  cut(): void {
    this.#abort.abort(new Error("the receiver is closing"));
    this.#socket.destroy();
  }
}

import type { Delivery } from "./gen/api/boomerang/v1/boomerang_pb.js";
import { BadHeaderError, WebhookError, defaultToleranceMs, verifyWebhook, type HeaderSource } from "./webhook.js";

/**
 * Handles one callback delivery. Returning (or resolving) acknowledges it;
 * throwing (or rejecting) fails the attempt, and the server retries it
 * according to the task's retry policy.
 *
 * Deliveries are at least once: the same occurrence of a task can arrive
 * again after a timeout, a lost acknowledgement or a server restart. A
 * handler with effects that must not repeat should deduplicate by
 * (taskId, fireAtMs), which names one occurrence of a task; attempt and
 * deliveryId change from one attempt to the next. The signal aborts when
 * the receiver shuts down or the server hangs up.
 */
export type Handler = (delivery: Delivery, signal: AbortSignal) => void | Promise<void>;

/** The largest delivery payload a receiver accepts by default, in bytes. */
export const defaultMaxDelivery = 16 << 20;

/** Configures a WebhookReceiver or HTTPReceiver. */
export interface WebhookReceiverConfig {
  /** The client's signing secret, as registerClient returned it. Required. */
  secret: Uint8Array | string;
  /** Receives each delivery whose signature checks out. Required. */
  handler: Handler;
  /** How far a delivery's timestamp may be from the clock. Default 5 minutes. */
  toleranceMs?: number;
  /** Bounds the payload, in bytes. Default defaultMaxDelivery (16 MiB). */
  maxBody?: number;
  /** The receiver's clock, Unix milliseconds. Default Date.now. */
  now?: () => number;
}

/** An HTTP answer: status, headers and a plain-text body ("" for none). */
export interface WebhookAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * WebhookReceiver receives HTTP webhook deliveries independently of any
 * server framework: it checks the signature, hands the delivery to the
 * handler, and answers 204 when the handler succeeds, so the server counts
 * it delivered.
 *
 *     405 the method is not POST
 *     413 the body is larger than maxBody
 *     400 a Boomerang header is missing or malformed
 *     401 no signature, a signature that does not match, or a stale timestamp
 *     500 the handler failed (the first line of its message is the body)
 *
 * The server retries 500 and dead-letters at once on 400, 401, 405 and 413,
 * which only a configuration change can fix. fetch serves the Fetch API
 * (edge runtimes, Deno, Bun); HTTPReceiver adds Node.js http, Express and
 * Fastify.
 */
export class WebhookReceiver {
  readonly secret: Uint8Array | string;
  readonly handler: Handler;
  readonly toleranceMs: number;
  readonly maxBody: number;
  readonly #now: () => number;

  constructor(config: WebhookReceiverConfig) {
    if (config.secret.length === 0) {
      throw new Error("WebhookReceiver: secret is required");
    }
    if (typeof config.handler !== "function") {
      throw new Error("WebhookReceiver: handler is required");
    }
    if ((config.toleranceMs ?? 0) < 0 || (config.maxBody ?? 0) < 0) {
      throw new Error("WebhookReceiver: toleranceMs and maxBody must not be negative");
    }
    this.secret = config.secret;
    this.handler = config.handler;
    this.toleranceMs = config.toleranceMs || defaultToleranceMs;
    this.maxBody = config.maxBody || defaultMaxDelivery;
    this.#now = config.now ?? Date.now;
  }

  /** Answers one request whose body has been read whole. */
  async receive(method: string, headers: HeaderSource, body: Uint8Array, signal: AbortSignal = new AbortController().signal): Promise<WebhookAnswer> {
    if (method !== "POST") {
      return answer(405, "method must be POST", { Allow: "POST" });
    }
    if (body.length > this.maxBody) {
      return this.tooLarge();
    }
    let delivery: Delivery;
    try {
      delivery = await verifyWebhook(this.secret, headers, body, { now: this.#now(), toleranceMs: this.toleranceMs });
    } catch (err) {
      if (err instanceof WebhookError) {
        return answer(err instanceof BadHeaderError ? 400 : 401, err.message);
      }
      throw err;
    }
    try {
      await this.handler(delivery, signal);
    } catch (err) {
      return answer(500, firstLine(err instanceof Error ? err.message : String(err)));
    }
    return answer(204, "");
  }

  /** The 413 answer. */
  tooLarge(): WebhookAnswer {
    return answer(413, `body larger than ${this.maxBody} bytes`);
  }

  /** Serves a Fetch API request: `export default { fetch: (r) => receiver.fetch(r) }`. */
  readonly fetch = async (request: Request): Promise<Response> => {
    const declared = Number(request.headers.get("content-length") ?? "0");
    const a =
      declared > this.maxBody
        ? this.tooLarge()
        : await this.receive(request.method, request.headers, new Uint8Array(await request.arrayBuffer()), request.signal);
    return new Response(a.body === "" ? null : a.body, { status: a.status, headers: a.headers });
  };
}

function answer(status: number, body: string, headers: Record<string, string> = {}): WebhookAnswer {
  return { status, headers: body === "" ? headers : { "Content-Type": "text/plain; charset=utf-8", ...headers }, body };
}

function firstLine(s: string): string {
  const i = s.search(/[\r\n]/);
  return i < 0 ? s : s.slice(0, i);
}

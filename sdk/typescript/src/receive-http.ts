import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { WebhookReceiver, type WebhookAnswer } from "./receiver.js";

/** The parts of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    options: { parseAs: "buffer"; bodyLimit: number },
    parser: (request: unknown, body: Buffer, done: (err: Error | null, body?: Buffer) => void) => void,
  ): void;
  all(path: string, handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<void>): unknown;
}

/** The parts of a Fastify request the plugin uses. */
export interface FastifyRequestLike {
  method: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  raw: IncomingMessage;
}

/** The parts of a Fastify reply the plugin uses. */
export interface FastifyReplyLike {
  code(status: number): FastifyReplyLike;
  headers(values: Record<string, string>): FastifyReplyLike;
  send(payload?: string): FastifyReplyLike;
  raw: ServerResponse;
}

/**
 * A body too large by up to drainLimit bytes is read and dropped before the
 * 413 goes out, and the connection kept: closed with the body still
 * arriving, the connection would be reset, and the sender might see the
 * reset instead of the answer. A larger one is answered at once, and the
 * connection closed.
 */
const drainLimit = 1 << 20;

/**
 * HTTPReceiver is a WebhookReceiver for Node.js servers:
 *
 *     const receiver = new HTTPReceiver({ secret, handler });
 *     http.createServer(receiver.listener).listen(8080);      // Node.js http
 *     app.post("/hook", receiver.listener);                    // Express
 *     fastify.register(receiver.fastify, { prefix: "/hook" }); // Fastify
 *
 * The signature covers the exact body bytes, so the receiver reads the raw
 * body itself. With Express, mount it before any body parser, or after
 * express.raw() (it then uses req.body). The Fastify plugin installs a raw
 * body parser for its own routes only. The handler's signal aborts when
 * the server closes the connection before the answer.
 */
export class HTTPReceiver extends WebhookReceiver {
  /** A Node.js request listener; also an Express handler. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    void this.#serve(req, res);
  };

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let a: WebhookAnswer;
    try {
      const body = await this.#body(req);
      a = typeof body === "string" ? this.tooLarge() : await this.receive(req.method ?? "", req.headers, body, closed(res));
      if (body === "unread") {
        res.setHeader("Connection", "close"); // the rest of the body is not read
      }
    } catch (err) {
      a = { status: 500, headers: {}, body: err instanceof Error ? err.message : String(err) };
    }
    res.writeHead(a.status, a.headers).end(a.body === "" ? undefined : a.body);
  }

  /**
   * The raw body: from a raw body parser, or read from the request. A body
   * over maxBody is "too large" once read and dropped, and "unread" when it
   * is over by more than drainLimit (see there).
   */
  async #body(req: IncomingMessage): Promise<Uint8Array | "too large" | "unread"> {
    const parsed = (req as { body?: unknown }).body;
    if (parsed instanceof Uint8Array) {
      return parsed;
    }
    if (req.readableEnded) {
      if (parsed === undefined) {
        return new Uint8Array(0);
      }
      throw new Error("the body was parsed before the webhook receiver saw it; mount the receiver before body parsers or use express.raw()");
    }
    if (Number(req.headers["content-length"] ?? 0) > this.maxBody + drainLimit) {
      return "unread";
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.maxBody + drainLimit) {
        return "unread";
      }
      if (size <= this.maxBody) {
        chunks.push(chunk);
      }
    }
    return size > this.maxBody ? "too large" : Buffer.concat(chunks);
  }

  /**
   * A Fastify plugin that receives deliveries on its prefix. It reads every
   * content type as raw bytes, within its own scope only.
   */
  readonly fastify = (instance: FastifyInstanceLike, _options: unknown, done: (err?: Error) => void): void => {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: this.maxBody }, (_req, body, next) => next(null, body));
    instance.all("/", async (request, reply) => {
      const body = request.body instanceof Uint8Array ? request.body : new Uint8Array(0);
      const a = await this.receive(request.method, request.headers, body, closed(reply.raw));
      reply.code(a.status).headers(a.headers).send(a.body === "" ? undefined : a.body);
    });
    done();
  };
}

/** A signal that aborts if the connection closes before the answer is sent. */
function closed(res: ServerResponse): AbortSignal {
  const abort = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) {
      abort.abort(new Error("the server closed the connection"));
    }
  });
  return abort.signal;
}

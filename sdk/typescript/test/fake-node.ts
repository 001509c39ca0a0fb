// A fake node for the routing tests: it speaks the raw TCP frame protocol
// on a loopback port with just enough behaviour to drive the client's
// routing paths (sessions, a task map, batches, a routing view, and a hook
// that answers or drops requests its own way). The real server is
// exercised by the other tests.

import { createServer, type Server, type Socket } from "node:net";
import type { TestContext } from "node:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { sizeDelimitedEncode } from "@bufbuild/protobuf/wire";
import {
  FrameDecoder,
  RequestSchema,
  ResponseSchema,
  Status,
  TaskSchema,
  type GetRoutesResponse,
  type Request,
  type Task,
} from "../src/index.js";
import { waitLimitMs } from "./harness.js";

type ResponseInit = MessageInitShape<typeof ResponseSchema>;

/** Writes one response frame to a connection. */
export function answer(socket: Socket, resp: ResponseInit): void {
  socket.write(sizeDelimitedEncode(ResponseSchema, create(ResponseSchema, resp)));
}

/** A response refusing the request with status. */
export function refusal(req: Request, status: Status, message: string): ResponseInit {
  return { requestId: req.requestId, error: { status, message } };
}

export class FakeNode {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #waiters = new Set<() => void>();
  readonly sessions = new Set<string>();
  readonly tasks = new Map<bigint, Task>();
  /** Every request but GetRoutes, in order of arrival. */
  readonly received: Request[] = [];
  /** The task count of each RegisterTasks request. */
  readonly batches: number[] = [];
  /** The routing view; undefined: standalone. */
  routes: GetRoutesResponse | undefined;
  /** GetRoutes requests answered. */
  fetches = 0;
  /** Handles a request its own way when it returns true. */
  onRequest: ((socket: Socket, req: Request) => boolean) | undefined;
  #nextTask = 0n;
  #nextSession = 0;

  private constructor() {
    this.#server = createServer((socket) => this.#serve(socket));
  }

  /** Starts a node on a free loopback port, closed when the test ends. */
  static async start(t: TestContext): Promise<FakeNode> {
    const node = new FakeNode();
    await new Promise<void>((resolve) => node.#server.listen(0, "127.0.0.1", resolve));
    t.after(() => node.close());
    return node;
  }

  get address(): string {
    return `127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  /** Stops listening and drops every connection. */
  close(): Promise<void> {
    for (const s of this.#sockets) {
      s.destroy();
    }
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  /** Resolves once cond holds, checked after each request this node takes; rejects after waitLimitMs. */
  until(what: string, cond: () => boolean): Promise<void> {
    if (cond()) {
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const check = () => {
        if (cond()) {
          clearTimeout(timer);
          this.#waiters.delete(check);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}`));
      }, waitLimitMs);
      this.#waiters.add(check);
    });
  }

  #serve(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const decoder = new FrameDecoder(RequestSchema, 1 << 20);
    socket.on("data", (chunk: Buffer) => {
      try {
        decoder.push(chunk, (req) => {
          this.#take(socket, req);
          for (const w of [...this.#waiters]) {
            w();
          }
        });
      } catch {
        socket.destroy();
      }
    });
  }

  #take(socket: Socket, req: Request): void {
    if (req.body.case === "getRoutes") {
      this.fetches++;
      const view = this.routes ?? { standalone: true, shards: 64 };
      answer(socket, { requestId: req.requestId, body: { case: "getRoutes", value: view } });
      return;
    }
    this.received.push(req);
    if (this.onRequest?.(socket, req)) {
      return;
    }
    answer(socket, this.#handle(req));
  }

  #handle(req: Request): ResponseInit {
    const id = req.requestId;
    if (req.body.case === "login") {
      const session = `s${++this.#nextSession}`;
      this.sessions.add(session);
      return { requestId: id, body: { case: "login", value: { sessionId: session, expiresAtMs: BigInt(Date.now() + 3_600_000) } } };
    }
    if (!this.sessions.has(req.sessionId)) {
      return refusal(req, Status.UNAUTHORIZED, "unknown session");
    }
    switch (req.body.case) {
      case "getServerInfo":
        return { requestId: id, body: { case: "getServerInfo", value: { version: "fake", maxFrameBytes: 1n << 20n } } };
      case "registerTask":
        return { requestId: id, body: { case: "registerTask", value: { task: this.#register(req.body.value.group), created: true } } };
      case "registerTasks": {
        const results = req.body.value.tasks.map((t) => ({ result: { case: "registered" as const, value: { task: this.#register(t.group), created: true } } }));
        this.batches.push(results.length);
        return { requestId: id, body: { case: "registerTasks", value: { results } } };
      }
      case "getTask": {
        const task = this.tasks.get(req.body.value.id);
        return task === undefined ? refusal(req, Status.NOT_FOUND, "no such task") : { requestId: id, body: { case: "getTask", value: { task } } };
      }
    }
    return refusal(req, Status.INTERNAL, "not implemented by the fake");
  }

  #register(group: string): Task {
    const task = create(TaskSchema, { id: ++this.#nextTask, client: "tester", group });
    this.tasks.set(task.id, task);
    return task;
  }
}

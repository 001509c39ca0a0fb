// Runs the real boomerang binary for the tests: built once per test
// process from the repository's source, started on free loopback ports
// with a temporary data directory and a known admin password, and stopped
// when the test ends.

import { spawn, execFile, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createNetServer, connect as netConnect, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import type { TestContext } from "node:test";
import { dial, HTTPReceiver, type Client, type ClientOptions, type Delivery } from "../src/index.js";

export const adminPassword = "admin-password-sdk-ts";
/** Every wait in the tests is bounded by this. */
export const waitLimitMs = 60_000;

const repoRoot = resolve(fileURLToPath(import.meta.url), "../../../../..");
let built: Promise<string> | undefined;

/** Builds cmd/boomerang into a temporary directory, once per process. */
export function boomerangBinary(): Promise<string> {
  built ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), "boomerang-sdk-ts-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    const bin = join(dir, "boomerang");
    await promisify(execFile)("go", ["build", "-o", bin, "./cmd/boomerang"], { cwd: repoRoot });
    return bin;
  })();
  return built;
}

/** A running boomerang process. */
export class Server {
  readonly dataDir: string;
  readonly tcp: string;
  readonly http: string;
  readonly #proc: ChildProcess;
  readonly #exited: Promise<number | null>;

  constructor(dataDir: string, tcp: string, http: string, proc: ChildProcess, exited: Promise<number | null>) {
    this.dataDir = dataDir;
    this.tcp = tcp;
    this.http = http;
    this.#proc = proc;
    this.#exited = exited;
  }

  get tcpPort(): number {
    return Number(this.tcp.slice(this.tcp.lastIndexOf(":") + 1));
  }

  /** SIGTERM, then the exit code. */
  async stop(): Promise<number | null> {
    this.#proc.kill("SIGTERM");
    const timer = setTimeout(() => this.#proc.kill("SIGKILL"), waitLimitMs);
    try {
      return await this.#exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL, and wait until it is gone. */
  async kill(): Promise<void> {
    this.#proc.kill("SIGKILL");
    await this.#exited;
  }
}

export interface StartOptions {
  /** Reuse a data directory (a restart); default a new temporary one. */
  dataDir?: string;
  /** Listen for raw TCP on this port; default a free one. */
  tcpPort?: number;
  /** More flags. */
  args?: string[];
}

/** Starts boomerang and stops it when the test ends. */
export async function startServer(t: TestContext, options: StartOptions = {}): Promise<Server> {
  const bin = await boomerangBinary();
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "boomerang-data-")));
  if (options.dataDir === undefined) {
    t.after(() => rm(dataDir, { recursive: true, force: true }));
  }
  const args = [
    "serve", "--data-dir", dataDir, "--tcp-addr", `127.0.0.1:${options.tcpPort ?? 0}`, "--http-addr", "127.0.0.1:0",
    "--admin-password", adminPassword, "--partitions", "2", ...(options.args ?? []),
  ];
  const proc = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  t.after(async () => {
    proc.kill("SIGKILL");
    await exited;
  });
  const seen: string[] = [];
  const addresses = new Promise<[string, string]>((resolve, reject) => {
    const lines = createInterface({ input: proc.stderr! });
    lines.on("line", (line) => {
      seen.push(line);
      const m = / msg=listening tcp=(\S+) http=(\S+)/.exec(line);
      if (m !== null) {
        resolve([m[1]!, m[2]!]);
      }
    });
    proc.once("exit", (code) => reject(new Error(`boomerang exited (${code}) before listening:\n${seen.join("\n")}`)));
  });
  const [tcp, http] = await withTimeout(addresses, "boomerang to report its addresses");
  return new Server(dataDir, tcp, http, proc, exited);
}

/** Dials the server and closes the client when the test ends. */
export async function connect(t: TestContext, s: Server | string, clientId: string, password: string, options: ClientOptions = {}): Promise<Client> {
  const c = await dial(typeof s === "string" ? s : s.tcp, { credentials: { clientId, password }, signal: AbortSignal.timeout(waitLimitMs), ...options });
  t.after(() => c.close());
  return c;
}

export function admin(t: TestContext, s: Server, options: ClientOptions = {}): Promise<Client> {
  return connect(t, s, "admin", adminPassword, options);
}

/** Polls cond until it holds, at most waitLimitMs; what names it in the failure. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + waitLimitMs;
  while (!(await cond())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export async function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), waitLimitMs)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A signing secret every test client registers with. */
export const secret = "sdk-ts-signing-secret-0123456789";

/**
 * Inbox records deliveries and lets tests wait for them. Payloads that
 * start with "fail:" are refused, so the server retries or dead-letters
 * them; those that start with "flaky:" are refused on the first attempt
 * only.
 */
export class Inbox {
  readonly deliveries: Delivery[] = [];
  #waiters: Array<() => void> = [];

  readonly handler = (d: Delivery): void => {
    this.deliveries.push(d);
    for (const w of this.#waiters.splice(0)) {
      w();
    }
    const payload = text(d.payload);
    if (payload.startsWith("fail:") || (payload.startsWith("flaky:") && d.attempt === 1)) {
      throw new Error(`refused ${payload}\nsecond line`);
    }
  };

  /** The first delivery that matches, waiting for it. */
  async next(what: string, match: (d: Delivery) => boolean): Promise<Delivery> {
    const deadline = Date.now() + waitLimitMs;
    for (;;) {
      const d = this.deliveries.find(match);
      if (d !== undefined) {
        return d;
      }
      if (Date.now() > deadline) {
        throw new Error(`no delivery: ${what}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

export function text(b: Uint8Array): string {
  return new TextDecoder().decode(b);
}

/** An HTTPReceiver on Node.js http, on a free loopback port, closed at the end. */
export async function webhookServer(t: TestContext, inbox: Inbox, receiverSecret = secret): Promise<{ url: string; server: HttpServer }> {
  const receiver = new HTTPReceiver({ secret: receiverSecret, handler: inbox.handler });
  const server = createHttpServer(receiver.listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => closeHttp(server));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/hook`, server };
}

export function closeHttp(server: HttpServer): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Proxy forwards TCP connections to the server, and can drop what a
 * client sends and cut its connection: a network failure with requests in
 * flight, injected around the real server.
 */
export class Proxy {
  readonly #server: NetServer;
  readonly #pairs = new Set<[Socket, Socket]>();
  #blackhole: (() => void) | undefined;

  private constructor(target: string) {
    const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
    this.#server = createNetServer((client) => {
      const upstream = netConnect({ host, port });
      const pair: [Socket, Socket] = [client, upstream];
      this.#pairs.add(pair);
      client.on("data", (chunk) => {
        if (this.#blackhole === undefined) {
          upstream.write(chunk);
        } else {
          this.#blackhole();
        }
      });
      upstream.pipe(client);
      const end = () => {
        this.#pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on("close", end).on("error", end);
      upstream.on("close", end).on("error", end);
    });
  }

  static async start(t: TestContext, target: string): Promise<{ proxy: Proxy; address: string }> {
    const p = new Proxy(target);
    await new Promise<void>((resolve) => p.#server.listen(0, "127.0.0.1", resolve));
    t.after(() => p.close());
    return { proxy: p, address: `127.0.0.1:${(p.#server.address() as { port: number }).port}` };
  }

  /**
   * Swallows what clients send from now on instead of forwarding it;
   * resolves once something was swallowed.
   */
  swallow(): Promise<void> {
    return new Promise((resolve) => (this.#blackhole = resolve));
  }

  /** Cuts every connection and forwards again. */
  cut(): void {
    this.#blackhole = undefined;
    for (const [a, b] of this.#pairs) {
      a.destroy();
      b.destroy();
    }
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

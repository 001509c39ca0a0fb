// The real things the end-to-end tests run against: the boomerang binary
// (with the built panel embedded) and a webhook receiver, both on
// loopback, both stopped by the tests.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";

export const adminPassword = "e2e-admin-password";

export interface Boomerang {
  url: string; // http://127.0.0.1:port
  stop: () => Promise<void>;
}

// startBoomerang runs BOOMERANG_BIN, or builds the binary first.
export async function startBoomerang(): Promise<Boomerang> {
  const dir = mkdtempSync(join(tmpdir(), "boomerang-e2e-"));
  let bin = process.env.BOOMERANG_BIN;
  if (!bin) {
    bin = join(dir, "boomerang");
    execFileSync("go", ["build", "-o", bin, "./cmd/boomerang"], { cwd: resolve(import.meta.dirname, "../.."), stdio: "inherit" });
  }
  const proc = spawn(
    bin,
    [
      "--data-dir", join(dir, "data"),
      "--tcp-addr", "127.0.0.1:0",
      "--http-addr", "127.0.0.1:0",
      "--admin-password", adminPassword,
      "--ui-min-refresh", "1s",
      "--stats-interval", "1s",
      "--log-format", "json",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("boomerang did not start within 30 s")), 30_000);
    proc.on("exit", (code) => fail(new Error(`boomerang exited with ${code}`)));
    createInterface({ input: proc.stderr! }).on("line", (line) => {
      try {
        const rec = JSON.parse(line) as { msg?: string; http?: string };
        if (rec.msg === "listening" && rec.http) {
          clearTimeout(timer);
          ok(`http://${rec.http}`);
        }
      } catch {
        // not a log record
      }
    });
  });
  return {
    url,
    stop: async () => {
      await stopProcess(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return Promise.resolve();
  return new Promise((ok) => {
    const kill = setTimeout(() => proc.kill("SIGKILL"), 15_000);
    proc.once("exit", () => {
      clearTimeout(kill);
      ok();
    });
    proc.kill("SIGTERM");
  });
}

// Receiver is a webhook endpoint that refuses deliveries of the groups in
// failing.
export interface Receiver {
  url: string;
  failing: Set<string>;
  delivered: { group: string; body: string }[];
  stop: () => Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const failing = new Set<string>();
  const delivered: Receiver["delivered"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const group = decodeURIComponent(String(req.headers["boomerang-group"] ?? ""));
      if (failing.has(group)) {
        res.writeHead(500).end("receiver down for maintenance");
        return;
      }
      delivered.push({ group, body: Buffer.concat(chunks).toString() });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    failing,
    delivered,
    stop: () => new Promise((ok) => server.close(() => ok())),
  };
}

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test, type TestContext } from "node:test";
import { ConnectError } from "@connectrpc/connect";
import { InvalidRequestError, NotFoundError, SessionExpiredError, Status, UnauthorizedError, WebClient, statusOf } from "../src/web.js";
import { adminPassword, startServer, waitFor, type Server } from "./harness.js";
import { everyOperation } from "./operations.js";

function web(s: Server, clientId: string, password: string, useJson = false): WebClient {
  return new WebClient({ baseUrl: `http://${s.http}`, credentials: { clientId, password }, useJson });
}

test("every operation over Connect", async (t: TestContext) => {
  const s = await startServer(t);
  await everyOperation(t, async (id, password) => {
    const c = web(s, id, password);
    await c.login({ clientId: id, password });
    return c;
  });
});

test("Connect errors carry the server's status, message and field", async (t) => {
  const s = await startServer(t);
  for (const useJson of [false, true]) {
    const c = web(s, "admin", adminPassword, useJson);
    await assert.rejects(c.schedule("x", { after: -1 }), (err: unknown) => err instanceof InvalidRequestError && err.field === "delay_ms");
    await assert.rejects(c.getTask({ id: 1n << 60n }), (err: unknown) => err instanceof NotFoundError && statusOf(err) === Status.NOT_FOUND);
    const info = await c.getServerInfo();
    assert.ok(info.maxFrameBytes > 0n);
  }
  await assert.rejects(web(s, "admin", "wrong password").listClients(), UnauthorizedError);
  // A transport failure stays the transport's error.
  const down = new WebClient({ baseUrl: "http://127.0.0.1:1", session: { id: "x", expiresAt: new Date(Date.now() + 60_000), admin: false } });
  await assert.rejects(down.getServerInfo(), ConnectError);
});

test("the Connect client refreshes its session on the way and renews a refused one", async (t) => {
  const s = await startServer(t, { args: ["--session-ttl", "2s"] });
  const c = web(s, "admin", adminPassword);
  await c.listClients();
  const first = c.session!.id;
  await waitFor("two thirds of the session's life", () => Date.now() >= c.session!.expiresAt.getTime() - 600);
  await c.listClients();
  assert.notEqual(c.session!.id, first, "the session was refreshed before the call");

  const stale = { id: first, expiresAt: new Date(Date.now() + 60_000), admin: true };
  await assert.rejects(new WebClient({ baseUrl: `http://${s.http}`, session: stale }).listClients(), SessionExpiredError);
  const renewing = new WebClient({ baseUrl: `http://${s.http}`, session: stale, credentials: { clientId: "admin", password: adminPassword } });
  await renewing.listClients();
  assert.notEqual(renewing.session!.id, first);
});

test("the web entry point needs no Node.js module", () => {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) {
      return;
    }
    seen.add(file);
    const source = readFileSync(file, "utf8");
    for (const [, spec] of source.matchAll(/^(?:import|export)\b[^;]*?from "([^"]+)"/gms)) {
      assert.ok(!spec!.startsWith("node:") && !["net", "http", "crypto", "fs"].includes(spec!), `${file} imports ${spec}`);
      if (spec!.startsWith(".")) {
        visit(resolve(dirname(file), spec!));
      }
    }
    assert.doesNotMatch(source, /\b(process|Buffer)\./, `${file} uses a Node.js global`);
  };
  visit(resolve(fileURLToPath(import.meta.url), "../../src/web.js"));
  assert.ok(seen.size > 5, `followed the imports (${seen.size} files)`);
});

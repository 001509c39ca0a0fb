import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import express from "express";
import Fastify from "fastify";
import {
  Backoff,
  HTTPReceiver,
  NotFoundError,
  Protocol,
  TCPReceiver,
  WebhookReceiver,
  signWebhook,
  type Client,
  type Delivery,
} from "../src/index.js";
import { Inbox, admin, closeHttp, connect, secret, startServer, text, waitFor, webhookServer, type Server } from "./harness.js";

/** Registers a client whose tasks go to endpoint, with quick retries, and connects as it. */
async function clientFor(t: TestContext, s: Server, adminClient: Client, id: string, protocol: Protocol, endpoint: string, signingSecret = secret): Promise<Client> {
  await adminClient.registerClient({
    clientId: id,
    password: `${id}-password`,
    callback: { protocol, endpoint, timeoutMs: 5000n },
    retry: { backoff: Backoff.FIXED, initialIntervalMs: 10n, maxIntervalMs: 10n, maxAttempts: 3 },
    signingSecret: new TextEncoder().encode(signingSecret),
  });
  return connect(t, s, id, `${id}-password`);
}

/** Schedules a good and a flaky task and checks both arrive as they should. */
async function roundTrip(c: Client, inbox: Inbox, clientId: string): Promise<void> {
  const group = "orders / Zürich 100%";
  const hello = await c.schedule("hello", { group });
  const d = await inbox.next(`hello for ${clientId}`, (x) => x.taskId === hello.id);
  assert.equal(text(d.payload), "hello");
  assert.equal(d.client, clientId);
  assert.equal(d.group, group, "the group is decoded from its escaped header");
  assert.equal(d.fireAtMs, hello.fireAtMs);
  assert.equal(d.attempt, 1);
  assert.ok(d.term >= 1n, `the leader's term arrives: ${d.term}`);

  const flaky = await c.schedule("flaky:1");
  const second = await inbox.next(`the retry for ${clientId}`, (x) => x.taskId === flaky.id && x.attempt === 2);
  assert.equal(text(second.payload), "flaky:1");
  await waitFor("the acknowledged task to be deleted", async () => {
    try {
      await c.getTask({ id: flaky.id });
      return false;
    } catch (err) {
      return err instanceof NotFoundError;
    }
  });
}

test("webhooks arrive through Node.js http, Express and Fastify", async (t) => {
  const s = await startServer(t);
  const a = await admin(t, s);

  const viaHttp = new Inbox();
  const { url } = await webhookServer(t, viaHttp);
  await roundTrip(await clientFor(t, s, a, "node-http", Protocol.HTTP, url), viaHttp, "node-http");

  const viaExpress = new Inbox();
  const app = express();
  app.post("/hook", new HTTPReceiver({ secret, handler: viaExpress.handler }).listener);
  const viaExpressRaw = new Inbox();
  app.post("/raw", express.raw({ type: "*/*" }), new HTTPReceiver({ secret, handler: viaExpressRaw.handler }).listener);
  const expressServer = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => expressServer.once("listening", resolve));
  t.after(() => closeHttp(expressServer));
  const expressPort = (expressServer.address() as AddressInfo).port;
  await roundTrip(await clientFor(t, s, a, "express", Protocol.HTTP, `http://127.0.0.1:${expressPort}/hook`), viaExpress, "express");
  await roundTrip(await clientFor(t, s, a, "express-raw", Protocol.HTTP, `http://127.0.0.1:${expressPort}/raw`), viaExpressRaw, "express-raw");

  const viaFastify = new Inbox();
  const fastify = Fastify();
  await fastify.register(new HTTPReceiver({ secret, handler: viaFastify.handler }).fastify, { prefix: "/hook" });
  const fastifyUrl = await fastify.listen({ port: 0, host: "127.0.0.1" });
  t.after(() => fastify.close());
  await roundTrip(await clientFor(t, s, a, "fastify", Protocol.HTTP, `${fastifyUrl}/hook`), viaFastify, "fastify");
});

test("a delivery signed with another secret is refused and dead-lettered", async (t) => {
  const s = await startServer(t);
  const a = await admin(t, s);
  const inbox = new Inbox();
  const { url } = await webhookServer(t, inbox, "the receiver's own secret");
  const c = await clientFor(t, s, a, "mismatch", Protocol.HTTP, url);
  const task = await c.schedule("never handled");
  await waitFor("the dead letter", async () => (await c.listDeadLetters()).deadLetters.some((d) => d.task?.id === task.id));
  const [dl] = (await c.listDeadLetters()).deadLetters;
  assert.match(dl!.lastError, /401/);
  assert.equal(dl!.attempts, 1, "401 is final: no retries");
  assert.equal(inbox.deliveries.length, 0, "the handler never saw it");
});

test("the webhook receiver answers as documented", async (t) => {
  const meta = { deliveryId: 7n, taskId: 281474976710657n, attempt: 1, fireAtMs: 1767225600000n, client: "billing", group: "customer 7", term: 3n, timestamp: 1767225600 };
  const clock = () => 1767225600_000;
  const seen: Delivery[] = [];
  const handler = (d: Delivery) => {
    seen.push(d);
    if (text(d.payload) === "boom") {
      throw new Error("handler failed\nwith a second line");
    }
  };
  const receiver = new HTTPReceiver({ secret: "whsec_example", handler, now: clock, maxBody: 64 });
  const { url } = await (async () => {
    const { createServer } = await import("node:http");
    const server = createServer(receiver.listener);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(() => closeHttp(server));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
  })();
  const body = (s: string) => new TextEncoder().encode(s);
  const signed = async (payload: string, change: (h: Record<string, string>) => void = () => {}) => {
    const h = await signWebhook("whsec_example", meta, body(payload));
    change(h);
    return h;
  };
  const cases: Array<{ name: string; method?: string; headers: Record<string, string>; payload: string; status: number; reply?: RegExp }> = [
    { name: "signed", headers: await signed(`{"invoice":42}`), payload: `{"invoice":42}`, status: 204 },
    { name: "handler error", headers: await signed("boom"), payload: "boom", status: 500, reply: /^handler failed$/ },
    { name: "not POST", method: "PUT", headers: await signed("x"), payload: "x", status: 405 },
    { name: "too large", headers: await signed("x".repeat(65)), payload: "x".repeat(65), status: 413 },
    { name: "unsigned", headers: await signed("x", (h) => delete h["Boomerang-Signature"]), payload: "x", status: 401, reply: /no v1= signature/ },
    { name: "altered", headers: await signed("x"), payload: "y", status: 401, reply: /does not match/ },
    { name: "term relabelled", headers: await signed("x", (h) => (h["Boomerang-Term"] = "4")), payload: "x", status: 401, reply: /does not match/ },
    { name: "no term", headers: await signed("x", (h) => delete h["Boomerang-Term"]), payload: "x", status: 400, reply: /Boomerang-Term/ },
    { name: "stale", headers: await signed("x", (h) => (h["Boomerang-Timestamp"] = "1767225000")), payload: "x", status: 401 },
    { name: "bad header", headers: await signed("x", (h) => (h["Boomerang-Attempt"] = "first")), payload: "x", status: 400 },
  ];
  const fetchReceiver = new WebhookReceiver({ secret: "whsec_example", handler, now: clock, maxBody: 64 });
  for (const c of cases) {
    const init = { method: c.method ?? "POST", headers: c.headers, body: c.payload };
    for (const [via, resp] of [
      ["Node.js http", await fetch(url, init)],
      ["Fetch API", await fetchReceiver.fetch(new Request("http://receiver.test/", init))],
    ] as const) {
      assert.equal(resp.status, c.status, `${c.name} via ${via}`);
      const reply = await resp.text();
      if (c.reply !== undefined) {
        assert.match(reply, c.reply, `${c.name} via ${via}`);
      }
      if (c.status === 405) {
        assert.equal(resp.headers.get("allow"), "POST");
      }
      if (c.status === 413 && via === "Node.js http") {
        // A little too large: read and dropped, the connection kept.
        assert.notEqual(resp.headers.get("connection"), "close", c.name);
      }
    }
  }
  assert.equal(seen.length, 4, "the handler saw the signed deliveries only");
  assert.equal(seen[0]?.group, "customer 7");
  assert.equal(seen[0]?.taskId, 281474976710657n);
  assert.equal(seen[0]?.term, 3n);
});

test("the TCP receiver takes deliveries and answers with acks", async (t) => {
  const s = await startServer(t);
  const a = await admin(t, s);
  const inbox = new Inbox();
  // The first tasks of two groups wait for each other: they can only both
  // finish if the receiver runs deliveries concurrently.
  const firsts = new Set<string>();
  let arrived = 0;
  let release!: () => void;
  const together = new Promise<void>((resolve) => (release = resolve));
  let running = 0;
  let maxRunning = 0;
  const receiver = new TCPReceiver({
    maxInFlight: 8,
    handler: async (d, signal) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (["g0", "g1"].includes(d.group) && d.attempt === 1 && !firsts.has(d.group)) {
          firsts.add(d.group);
          if (++arrived === 2) {
            release();
          }
          await together;
        }
        assert.equal(signal.aborted, false);
        inbox.handler(d);
      } finally {
        running--;
      }
    },
  });
  const { port } = await receiver.listen(0);
  let closed = false;
  t.after(() => (closed ? undefined : receiver.close(1000)));
  const c = await clientFor(t, s, a, "tcp", Protocol.TCP, `127.0.0.1:${port}`);

  const groups = 4;
  const perGroup = 25;
  const tasks = await Promise.all(
    Array.from({ length: groups * perGroup }, (_, i) => c.schedule(`task ${i}`, { group: `g${i % groups}` })),
  );
  for (const task of tasks) {
    await inbox.next(`task ${task.id}`, (d) => d.taskId === task.id);
  }
  // Registrations sent together are accepted in any order; each group is
  // then delivered in due order: by due time, then acceptance sequence.
  for (let g = 0; g < groups; g++) {
    const arrived = inbox.deliveries.filter((d) => d.group === `g${g}`).map((d) => d.taskId);
    const due = tasks
      .filter((task) => task.group === `g${g}`)
      .sort((x, y) => (x.fireAtMs === y.fireAtMs ? Number(x.seq - y.seq) : Number(x.fireAtMs - y.fireAtMs)))
      .map((task) => task.id);
    assert.deepEqual(arrived, due, `group g${g} arrives in due order`);
  }
  assert.ok(
    inbox.deliveries.every((d) => d.term >= 1n),
    "every delivery carries the leader's term",
  );
  assert.ok(maxRunning >= 2 && maxRunning <= 8, `handlers overlapped within the limit (at most ${maxRunning} at once)`);

  const failing = await c.schedule("fail:tcp");
  await waitFor("the refused delivery's dead letter", async () => (await c.listDeadLetters()).deadLetters.some((d) => d.task?.id === failing.id));
  const dl = (await c.listDeadLetters()).deadLetters.find((d) => d.task?.id === failing.id)!;
  assert.match(dl.lastError, /refused fail:tcp/);
  assert.equal(dl.attempts, 3);
  const flaky = await c.schedule("flaky:tcp");
  await inbox.next("the retried TCP delivery", (d) => d.taskId === flaky.id && d.attempt === 2);
  await waitFor("every task to be acknowledged", async () => (await c.listTasks()).tasks.length === 0);

  closed = true;
  await receiver.close(10_000);
});

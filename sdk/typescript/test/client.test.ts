import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ClientClosedError,
  ConnectionLostError,
  InvalidRequestError,
  SessionExpiredError,
  Status,
  UnauthorizedError,
  dial,
  statusOf,
} from "../src/index.js";
import { Proxy, admin, adminPassword, connect, startServer, text, waitFor, waitLimitMs } from "./harness.js";
import { everyOperation } from "./operations.js";

test("every operation over raw TCP", async (t) => {
  const s = await startServer(t);
  await everyOperation(t, (id, password) => connect(t, s, id, password));
  assert.equal(await s.stop(), 0, "boomerang exits cleanly on SIGTERM");
});

test("pipelined requests are matched to their responses", async (t) => {
  const s = await startServer(t);
  const c = await admin(t, s);
  const n = 500;
  const tasks = await Promise.all(Array.from({ length: n }, (_, i) => c.schedule(`task ${i}`, { after: 3_600_000, group: `g${i % 7}` })));
  tasks.forEach((task, i) => assert.equal(text(task.payload), `task ${i}`));
  assert.equal(new Set(tasks.map((task) => task.id)).size, n);
  // Reads and cancels interleaved, all in flight together.
  const kept = tasks.slice(100);
  const [got] = await Promise.all([Promise.all(kept.map((task) => c.getTask({ id: task.id }))), ...tasks.slice(0, 100).map((task) => c.cancel(task.id))]);
  got.forEach((g, i) => assert.equal(g.task?.id, kept[i]!.id));

  // A small in-flight limit makes calls wait for a slot, not fail.
  const narrow = await admin(t, s, { maxInFlight: 2 });
  const infos = await Promise.all(Array.from({ length: 50 }, () => narrow.getServerInfo()));
  assert.equal(infos.length, 50);
});

test("a cron task is due at its first occurrence and shows the next ones", async (t) => {
  const s = await startServer(t);
  const c = await admin(t, s);
  const task = await c.schedule("report", { cron: "0 9 * * MON-FRI", timeZone: "Europe/Zurich" });
  assert.equal(task.cron, "0 9 * * MON-FRI");
  assert.equal(task.timeZone, "Europe/Zurich");
  // 09:00 in Zurich is 08:00 or, in summer, 07:00 UTC.
  assert.ok([8, 7].map((h) => BigInt(h * 3_600_000)).includes(task.fireAtMs % 86_400_000n));
  const got = await c.getTask({ id: task.id });
  assert.equal(got.task?.nextFireAtMs.length, 5);
  assert.ok(got.task!.nextFireAtMs[0]! > task.fireAtMs);
  await assert.rejects(c.schedule("x", { cron: "0 9 * * *", timeZone: "Nowhere/Land" }), (err: unknown) => err instanceof InvalidRequestError && err.field === "time_zone");
});

test("a registration with a replace key replaces the waiting task", async (t) => {
  const s = await startServer(t);
  const c = await admin(t, s);
  const first = await c.schedule("v1", { replaceKey: "reindex", debounce: 3_600_000, maxWait: 7_200_000 });
  assert.equal(first.replaceKey, "reindex");
  const resp = await c.registerTask({ payload: new TextEncoder().encode("v2"), replaceKey: "reindex", debounceMs: 3_600_000n });
  assert.equal(resp.replaced, true);
  assert.equal(resp.created, false);
  assert.equal(resp.task?.id, first.id);
  assert.equal(text(resp.task!.payload), "v2");
});

test("a client's groups take rate limits", async (t) => {
  const s = await startServer(t);
  const c = await admin(t, s);
  const registered = await c.registerClient({
    clientId: "limited",
    password: "limited-password",
    callback: { protocol: 4, endpoint: "127.0.0.1:9" },
    groupRateLimit: { maxDeliveries: 10, intervalMs: 1000n },
    groupRateLimits: { reports: { maxDeliveries: 1, intervalMs: 60_000n } },
  });
  assert.equal(registered.client?.groupRateLimit?.maxDeliveries, 10);
  assert.equal(registered.client?.groupRateLimits["reports"]?.intervalMs, 60_000n);
  await c.registerTasks({ client: "limited", tasks: [{ group: "reports", when: { case: "delayMs", value: 3_600_000n } }] });
  const group = await c.getGroup({ client: "limited", group: "reports" });
  assert.equal(group.group?.rateLimit?.maxDeliveries, 1);
});

test("errors carry the server's status, message and field", async (t) => {
  const s = await startServer(t, { args: ["--max-payload-bytes", "1024", "--max-frame-bytes", "8192"] });
  const c = await admin(t, s);
  await assert.rejects(c.schedule("x", { after: -5 }), (err: unknown) => {
    assert.ok(err instanceof InvalidRequestError);
    assert.equal(err.status, Status.INVALID_REQUEST);
    assert.equal(err.field, "delay_ms");
    assert.match(err.serverMessage, /got -5/);
    assert.equal(statusOf(err), Status.INVALID_REQUEST);
    return true;
  });
  // Over the payload limit: the server refuses it. Over the frame limit:
  // refused before sending, since the server would drop the connection.
  await assert.rejects(c.schedule(new Uint8Array(2000)), (err: unknown) => err instanceof InvalidRequestError && err.field === "payload" && /1024/.test(err.serverMessage));
  await assert.rejects(c.schedule(new Uint8Array(9000)), (err: unknown) => err instanceof InvalidRequestError && err.field === "payload" && /8192/.test(err.serverMessage));
  await c.getServerInfo(); // the connection survived

  await assert.rejects(dial(s.tcp, { credentials: { clientId: "admin", password: "wrong password" } }), UnauthorizedError);
  assert.equal(statusOf(undefined), Status.OK);
  assert.equal(statusOf(new Error("x")), Status.UNSPECIFIED);

  // Aborted and timed-out calls reject with the signal's reason.
  const aborted = new AbortController();
  aborted.abort(new Error("changed my mind"));
  await assert.rejects(c.getServerInfo({}, { signal: aborted.signal }), /changed my mind/);

  c.close();
  await assert.rejects(c.getServerInfo(), ClientClosedError);
});

test("scheduleBatch cuts tasks into requests within the frame and batch limits", async (t) => {
  const s = await startServer(t, { args: ["--max-payload-bytes", "1024", "--max-frame-bytes", "8192"] });
  const c = await admin(t, s);
  const tasks = Array.from({ length: 1500 }, (_, i) => ({ payload: `task ${i}`, schedule: { after: 3_600_000, group: `g${i % 5}` } }));
  // Many tasks of 1000 bytes: a few per frame; one over the payload limit
  // (refused by the server), one over the frame limit (refused here).
  for (let i = 0; i < 30; i++) tasks.push({ payload: "p".repeat(1000), schedule: { after: 3_600_000, group: "big" } });
  tasks.push({ payload: "p".repeat(2000), schedule: { after: 3_600_000, group: "big" } });
  tasks.push({ payload: "p".repeat(9000), schedule: { after: 3_600_000, group: "big" } });
  const results = await c.scheduleBatch(tasks);
  assert.equal(results.length, tasks.length);
  results.slice(0, 1530).forEach((r, i) => assert.ok(r.task !== undefined && r.created && r.error === undefined, `task ${i}: ${String(r.error)}`));
  assert.ok(results[1500]!.task!.seq < results[1529]!.task!.seq, "a group's tasks keep their order");
  const [overPayload, overFrame] = results.slice(1530);
  assert.ok(overPayload!.error instanceof InvalidRequestError && /1024/.test(overPayload!.error.serverMessage));
  assert.ok(overFrame!.error instanceof InvalidRequestError && /8192/.test(overFrame!.error.serverMessage));
  let big = 0;
  for await (const task of c.tasks({ group: "big" })) {
    assert.equal(task.payload.length, 1000);
    big++;
  }
  assert.equal(big, 30);

  // A request over the batch limit fails as a whole.
  await assert.rejects(c.registerTasks({ tasks: Array.from({ length: 1001 }, () => ({ payload: new Uint8Array([1]) })) }), (err: unknown) => err instanceof InvalidRequestError && err.field === "tasks");
  // The whole request's error is each task's.
  c.close();
  const closed = await c.scheduleBatch([{ payload: "x" }, { payload: "y" }]);
  assert.ok(closed.every((r) => r.error instanceof ClientClosedError));
});

test("the session is refreshed before it expires, and renewed when refused", async (t) => {
  const s = await startServer(t, { args: ["--session-ttl", "2s"] });
  const c = await admin(t, s);
  const first = c.session!.id;
  await waitFor("the session to be refreshed", () => c.session!.id !== first);
  assert.ok(c.session!.expiresAt.getTime() > Date.now());
  await c.getServerInfo();

  // The replaced session is refused; a client holding only it fails,
  // one with credentials logs in again by itself.
  const stale = { id: first, expiresAt: new Date(Date.now() + 60_000), admin: true };
  const bare = await dial(s.tcp, { session: stale }).catch((err: unknown) => err);
  assert.ok(bare instanceof SessionExpiredError, `adopting a replaced session: ${String(bare)}`);
  const renewing = await dial(s.tcp, { session: stale, credentials: { clientId: "admin", password: adminPassword } });
  t.after(() => renewing.close());
  assert.notEqual(renewing.session!.id, first);
  await renewing.listClients();
});

test("a call in flight when the connection breaks fails; the client reconnects", async (t) => {
  const s = await startServer(t);
  const { proxy, address } = await Proxy.start(t, s.tcp);
  const c = await connect(t, address, "admin", adminPassword, { reconnectMinMs: 10, reconnectMaxMs: 50 });
  const swallowed = proxy.swallow();
  const lost = c.getServerInfo();
  await swallowed;
  proxy.cut();
  await assert.rejects(lost, (err: unknown) => err instanceof ConnectionLostError && statusOf(err) === Status.UNSPECIFIED);
  const info = await c.getServerInfo({}, { timeoutMs: waitLimitMs });
  assert.ok(info.maxFrameBytes > 0n);
});

test("the client carries on after the server restarts", async (t) => {
  const first = await startServer(t);
  const c = await admin(t, first, { reconnectMinMs: 20, reconnectMaxMs: 200 });
  const task = await c.schedule("survives", { after: 3_600_000, idempotencyKey: "restart" });
  const session = c.session!.id;
  assert.equal(await first.stop(), 0);

  // Calls made while the server is down wait for it.
  const waiting = c.getTask({ id: task.id }, { timeoutMs: waitLimitMs });
  const second = await startServer(t, { dataDir: first.dataDir, tcpPort: first.tcpPort });
  const got = await waiting;
  assert.equal(text(got.task!.payload), "survives");
  // Sessions are stored like clients: the client's survived.
  const again = await c.registerTask({ payload: new Uint8Array([1]), when: { case: "delayMs", value: 1000n }, idempotencyKey: "restart" });
  assert.equal(again.created, false);
  assert.equal(again.task?.id, task.id);
  assert.equal(c.session!.id, session, "the client logged in again");
  await second.stop();
});

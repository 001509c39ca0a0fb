// Every operation of the service, run the same way through the TCP client
// and the Connect client against the real server.

import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import {
  Backoff,
  ConflictError,
  DispatchMode,
  InvalidRequestError,
  NotFoundError,
  Protocol,
  UnauthorizedError,
  type BoomerangApi,
} from "../src/index.js";
import { Inbox, adminPassword, secret, text, waitFor, webhookServer } from "./harness.js";

/** Opens a client of the kind under test, closed when the test ends. */
export type Open = (clientId: string, password: string) => Promise<BoomerangApi>;

export async function everyOperation(t: TestContext, open: Open): Promise<void> {
  const inbox = new Inbox();
  const { url } = await webhookServer(t, inbox);
  const admin = await open("admin", adminPassword);
  assert.equal(admin.session?.admin, true, "the bootstrap admin's session is an admin's");

  const info = await admin.getServerInfo();
  assert.ok(info.tcpAddress !== "" && info.maxPayloadBytes > 0n && info.maxFrameBytes > info.maxPayloadBytes, `server info ${info.tcpAddress}`);

  for (const id of ["alice", "bob"]) {
    const r = await admin.registerClient({
      clientId: id,
      password: `${id}-password`,
      callback: { protocol: Protocol.HTTP, endpoint: url, timeoutMs: 5000n },
      retry: { backoff: Backoff.FIXED, initialIntervalMs: 10n, maxIntervalMs: 10n, maxAttempts: 1 },
      defaultMode: DispatchMode.BLOCK_ON_ERROR,
      signingSecret: new TextEncoder().encode(secret),
    });
    assert.equal(r.client?.id, id);
    assert.equal(text(r.signingSecret), secret);
  }
  const clients = await admin.listClients();
  assert.deepEqual(clients.clients.map((c) => c.id).sort(), ["admin", "alice", "bob"]);

  const alice = await open("alice", "alice-password");
  const bob = await open("bob", "bob-password");

  // Deliver now: the payload comes back to the webhook, signed.
  const now = await alice.schedule("hello");
  const got = await inbox.next("hello", (d) => d.taskId === now.id);
  assert.equal(text(got.payload), "hello");
  assert.equal(got.client, "alice");
  assert.equal(got.attempt, 1);

  // A task's life: register, get, update, list, cancel.
  const reg = await alice.registerTask({ payload: new Uint8Array([0, 255, 1]), when: { case: "delayMs", value: 3_600_000n }, group: "g/1", idempotencyKey: "k1" });
  assert.equal(reg.created, true);
  const id = reg.task!.id;
  const again = await alice.registerTask({ payload: new Uint8Array([9]), when: { case: "delayMs", value: 1n }, group: "g/1", idempotencyKey: "k1" });
  assert.equal(again.created, false, "the idempotency key returns the existing task");
  assert.equal(again.task?.id, id);
  assert.deepEqual((await alice.getTask({ id })).task?.payload, new Uint8Array([0, 255, 1]));
  const due = BigInt(Date.now() + 7_200_000);
  const upd = await alice.updateTask({ id, payload: new Uint8Array(), when: { case: "fireAtMs", value: due }, repeatIntervalMs: 60_000n });
  assert.equal(upd.task?.fireAtMs, due);
  assert.equal(upd.task?.repeatIntervalMs, 60_000n);
  assert.equal(upd.task?.payload.length, 0);
  const listed = await alice.listTasks({ group: "g/1" });
  assert.deepEqual(listed.tasks.map((x) => x.id), [id]);
  const all: bigint[] = [];
  for await (const task of alice.tasks({ pageSize: 1 })) {
    all.push(task.id);
  }
  assert.ok(all.includes(id), "tasks() pages through every task");
  await alice.cancel(id);
  await assert.rejects(alice.getTask({ id }), NotFoundError);

  // Many tasks at once: each answered on its own, in order, without payloads.
  const batch = await alice.registerTasks({ tasks: [
    { payload: new Uint8Array([1]), when: { case: "delayMs", value: 3_600_000n }, group: "batch" },
    { payload: new Uint8Array([2]), when: { case: "delayMs", value: -1n } },
  ] });
  assert.equal(batch.results.length, 2);
  const first = batch.results[0]!.result;
  assert.ok(first.case === "registered" && first.value.created && first.value.task?.group === "batch" && first.value.task.payload.length === 0);
  const second = batch.results[1]!.result;
  assert.ok(second.case === "error" && second.value.field === "delay_ms", "an invalid task fails alone");
  const scheduled = await alice.scheduleBatch([
    { payload: "one", schedule: { after: 3_600_000, group: "batch" } },
    { payload: "two", schedule: { every: -1 } },
    { payload: "three", schedule: { after: 3_600_000, group: "batch" } },
  ]);
  assert.ok(scheduled[0]!.task !== undefined && scheduled[2]!.task !== undefined && scheduled[0]!.task.seq < scheduled[2]!.task.seq);
  assert.ok(scheduled[1]!.error instanceof InvalidRequestError && scheduled[1]!.error.field === "repeat_interval_ms");
  assert.equal(text((await alice.getTask({ id: scheduled[2]!.task.id })).task!.payload), "three");
  await alice.cancelTasks({ group: "batch" });

  // Dead letters: bob's "fail:" tasks are refused and have one attempt.
  const failing = await bob.schedule("fail:one");
  await waitFor("the dead letter", async () => (await bob.listDeadLetters()).deadLetters.some((d) => d.task?.id === failing.id));
  const dl = (await bob.listDeadLetters()).deadLetters.find((d) => d.task?.id === failing.id)!;
  const got1 = await bob.getDeadLetter({ id: dl.id });
  // The server keeps the status of a refused webhook, never its body.
  assert.equal(got1.deadLetter?.lastError, "delivery: HTTP 500 Internal Server Error");
  assert.equal(got1.deadLetter?.blocksGroup, false);
  const replayed = await bob.replayDeadLetter({ id: dl.id });
  assert.ok(replayed.task !== undefined && replayed.task.id !== failing.id);
  await inbox.next("the replay", (d) => d.taskId === replayed.task!.id);
  await assert.rejects(bob.getDeadLetter({ id: dl.id }), NotFoundError, "a replayed dead letter leaves the queue");
  // The replay fails too and becomes a dead letter of its own.
  await waitFor("the replay's dead letter", async () => (await bob.listDeadLetters()).deadLetters.some((d) => d.task?.id === replayed.task!.id));
  const letters: bigint[] = [];
  for await (const d of bob.deadLetters({ pageSize: 1 })) {
    letters.push(d.id);
  }
  assert.equal(letters.length, 1, "deadLetters() pages through the dead letters");
  await bob.deleteDeadLetter({ id: letters[0]! });
  await assert.rejects(bob.getDeadLetter({ id: letters[0]! }), NotFoundError);

  // A blocked group: unblock delivers the head again, skip moves past it.
  const head = await bob.schedule("fail:head", { group: "blk", mode: DispatchMode.BLOCK_ON_ERROR });
  await waitFor("the group to block", async () => (await bob.getGroup({ group: "blk" })).group?.blocked === true);
  const next = await bob.schedule("after the head", { group: "blk" });
  const blocked = (await bob.getGroup({ group: "blk" })).group!;
  const unblocked = await bob.unblockGroup({ group: "blk" });
  assert.ok(unblocked.task !== undefined && unblocked.task.payload.length > 0);
  await waitFor("the group to block again", async () => {
    const g = (await bob.getGroup({ group: "blk" })).group!;
    return g.blocked && g.blockedDeadLetterId !== blocked.blockedDeadLetterId;
  });
  await bob.skipGroup({ group: "blk" });
  await inbox.next("the task behind the skipped head", (d) => d.taskId === next.id);
  assert.ok(inbox.deliveries.some((d) => d.taskId === head.id));
  await assert.rejects(bob.skipGroup({ group: "blk" }), ConflictError, "skipping a group that is not blocked");

  // Bulk cleanup: count, then cancel a group's tasks; purge dead letters.
  for (let i = 0; i < 3; i++) await bob.schedule("bulk", { group: "bulk", after: 3_600_000 });
  const dry = await bob.cancelTasks({ group: "bulk", dryRun: true });
  assert.equal(dry.matched, 3n);
  assert.equal(dry.cancelled, 0n);
  assert.equal((await bob.cancelTasks({ group: "bulk" })).cancelled, 3n);
  const purged = await bob.purgeDeadLetters({ errorContains: "no such error" });
  assert.equal(purged.deleted, 0n);

  // Ownership: bob cannot see alice's tasks; a non-admin cannot list clients.
  const mine = await alice.schedule("alice's", { after: 3_600_000 });
  await assert.rejects(bob.getTask({ id: mine.id }), NotFoundError);
  await assert.rejects(bob.listClients(), UnauthorizedError);
  await assert.rejects(alice.schedule("x", { after: -1 }), (err: unknown) => err instanceof InvalidRequestError && err.field === "delay_ms");

  // A refreshed session replaces the old one.
  const old = alice.session!.id;
  const ref = await alice.refreshSession();
  assert.notEqual(ref.sessionId, old);
  assert.equal(alice.session?.id, ref.sessionId);
  await alice.listTasks();

  // Deregistering: refused while the client has tasks, then allowed.
  await assert.rejects(admin.deregisterClient({ clientId: "alice" }), ConflictError);
  for await (const task of alice.tasks()) {
    await alice.cancelTask({ id: task.id });
  }
  await admin.deregisterClient({ clientId: "alice" });
  await assert.rejects(alice.listTasks(), UnauthorizedError);
  await assert.rejects(admin.deregisterClient({ clientId: "alice" }), NotFoundError);
}

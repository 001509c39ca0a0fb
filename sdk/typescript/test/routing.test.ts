// Routing against fake nodes (test/fake-node.ts): the client sends each
// request to its shard's leader and hides NOT_LEADER, unreachable nodes
// and leader changes from its caller, as docs/cluster.md ("Routing") says.

import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { create } from "@bufbuild/protobuf";
import { BusyError, ConnectionLostError, GroupFullError, GetRoutesResponseSchema, Status, TaskSchema, dial, type Client, type ClientOptions, type Request } from "../src/index.js";
import { shardOfGroup } from "../src/shard.js";
import { FakeNode, answer, refusal } from "./fake-node.js";
import { waitLimitMs } from "./harness.js";

const shards = 64;

/** Dials node with the fake's credentials; closed when the test ends. */
async function dialFake(t: TestContext, node: FakeNode, options: ClientOptions = {}): Promise<Client> {
  const c = await dial(node.address, { credentials: { clientId: "tester", password: "pw" }, signal: AbortSignal.timeout(waitLimitMs), ...options });
  t.after(() => c.close());
  return c;
}

/**
 * Starts node 1, which the client dials, and node 2, with node 1's view
 * giving shard s to leaders(s); node 2 takes the client's session
 * (sessions are valid on every node).
 */
async function twoNodes(t: TestContext, leaders: (s: number) => string): Promise<{ one: FakeNode; two: FakeNode; c: Client }> {
  const [one, two] = [await FakeNode.start(t), await FakeNode.start(t)];
  one.routes = create(GetRoutesResponseSchema, {
    shards, revision: 1n, node: "1", client: "tester",
    nodes: [{ id: "1", tcpAddress: one.address }, { id: "2", tcpAddress: two.address }],
    leaders: Array.from({ length: shards }, (_, s) => leaders(s)),
  });
  const c = await dialFake(t, one);
  two.sessions.add(c.session!.id);
  return { one, two, c };
}

/** A group of the client on a shard node leads. */
function groupOn(leaders: (s: number) => string, node: string): string {
  const g = "abcdefghijkl".split("").find((g) => leaders(shardOfGroup(shards, "tester", g)) === node);
  assert.ok(g !== undefined, `no group on a shard node ${node} leads`);
  return g;
}

const byParity = (s: number) => (s % 2 === 0 ? "1" : "2");
const taskOfShard = (s: number) => (BigInt(s) << 48n) | 1n;

test("a task goes straight to its shard's leader, marked routed; the view is fetched once", async (t) => {
  const { one, two, c } = await twoNodes(t, byParity);
  for (let i = 0; i < 3; i++) {
    await c.schedule("x", { group: groupOn(byParity, "2") });
  }
  assert.equal(two.received.length, 3);
  assert.ok(two.received.every((r) => r.route && r.body.case === "registerTask"), "routed registrations on node 2");
  await c.schedule("x", { group: groupOn(byParity, "1") });
  assert.equal(one.tasks.size, 1);
  assert.equal(one.fetches, 1);
});

test("a NOT_LEADER answer sends the request on to the leader it names, and a newer hint refreshes the view", async (t) => {
  const { one, two, c } = await twoNodes(t, () => "1");
  one.onRequest = (socket, req) => {
    if (!req.route || req.body.case !== "registerTask") {
      return false;
    }
    const notLeader = { shard: 3, leaderId: "2", leaderTcpAddress: two.address, revision: 5n };
    answer(socket, { requestId: req.requestId, error: { status: Status.NOT_LEADER, message: "node 2 leads it", notLeader } });
    return true;
  };
  const task = await c.schedule("x", { group: "g" });
  assert.ok(task.id > 0n);
  assert.equal(two.tasks.size, 1);
  await one.until("the view fetched again", () => one.fetches >= 2);
});

test("a batch is split by leader, each part in order, the results in the batch's order", async (t) => {
  const { one, two, c } = await twoNodes(t, byParity);
  const groups = Array.from({ length: 20 }, (_, i) => String.fromCharCode(97 + i));
  const results = await c.scheduleBatch(groups.map((group) => ({ payload: group, schedule: { group } })));
  results.forEach((r, i) => assert.equal(r.task?.group, groups[i], `result ${i}: ${String(r.error)}`));
  for (const [node, name] of [[one, "1"], [two, "2"]] as const) {
    assert.deepEqual(node.batches.length, 1, `node ${name}: one batch`);
    const mine = groups.filter((g) => byParity(shardOfGroup(shards, "tester", g)) === name);
    assert.deepEqual([...node.tasks.values()].map((task) => task.group), mine, `node ${name}: its groups, in order`);
  }
});

test("a batch's part refused as a whole fails its own tasks only", async (t) => {
  const { two, c } = await twoNodes(t, byParity);
  two.onRequest = (socket, req) => {
    answer(socket, refusal(req, Status.GROUP_FULL, "too many waiting"));
    return true;
  };
  const groups = Array.from({ length: 20 }, (_, i) => String.fromCharCode(97 + i));
  const results = await c.scheduleBatch(groups.map((group) => ({ payload: group, schedule: { group } })));
  results.forEach((r, i) => {
    const onTwo = byParity(shardOfGroup(shards, "tester", groups[i]!)) === "2";
    assert.ok(onTwo ? r.error instanceof GroupFullError : r.task?.group === groups[i], `result ${i}: ${String(r.error)}`);
  });
});

test("a node that cannot be reached leaves the request to the node dialed", async (t) => {
  const { one, two, c } = await twoNodes(t, () => "2");
  await two.close();
  await c.schedule("x", { group: "g" });
  assert.equal(one.tasks.size, 1);
  assert.equal(one.received.at(-1)?.route, true, "still routed: node 1 answers NOT_LEADER should it not lead the shard");
});

test("a lost connection: a read is sent again, a registration without idempotency key fails", async (t) => {
  const { one, two, c } = await twoNodes(t, () => "2");
  two.onRequest = (socket) => {
    socket.destroy();
    return true;
  };
  const id = taskOfShard(2);
  one.tasks.set(id, create(TaskSchema, { id, client: "tester" }));
  const got = await c.getTask({ id });
  assert.equal(got.task?.id, id);
  await assert.rejects(c.schedule("x", { group: "g" }), ConnectionLostError);
});

test("after 32 attempts the request goes through the node dialed, unrouted, to be forwarded", async (t) => {
  const { one, two, c } = await twoNodes(t, () => "2");
  const three = await FakeNode.start(t);
  three.sessions.add(c.session!.id);
  // Nodes 2 and 3 each name the other as the leader, for ever.
  const bounce = (other: () => FakeNode, otherId: string) => (socket: Socket, req: Request) => {
    const notLeader = { shard: 0, leaderId: otherId, leaderTcpAddress: other().address, revision: 1n };
    answer(socket, { requestId: req.requestId, error: { status: Status.NOT_LEADER, message: "not here", notLeader } });
    return true;
  };
  two.onRequest = bounce(() => three, "3");
  three.onRequest = bounce(() => two, "2");
  await c.schedule("x", { group: "g" });
  assert.equal(two.received.length + three.received.length, 31);
  assert.ok([...two.received, ...three.received].every((r) => r.route));
  assert.equal(one.tasks.size, 1);
  assert.equal(one.received.at(-1)?.route, false);
});

test("with routing off the view is never fetched, nor a request marked routed", async (t) => {
  const node = await FakeNode.start(t);
  node.routes = create(GetRoutesResponseSchema, { shards, node: "1", leaders: Array.from({ length: shards }, () => "2") });
  const c = await dialFake(t, node, { routing: false });
  await c.schedule("x", { group: "g" });
  assert.equal(node.received.at(-1)?.route, false);
  assert.equal(node.fetches, 0);
});

test("against a standalone server the view is fetched once and nothing is routed", async (t) => {
  const node = await FakeNode.start(t);
  const c = await dialFake(t, node);
  await c.schedule("x", { group: "g" });
  await c.schedule("y", { group: "h" });
  assert.equal(node.fetches, 1);
  assert.ok(node.received.every((r) => !r.route));
});

test("BUSY: a read is asked again; a registration without idempotency key fails, since it may have taken effect", async (t) => {
  const { two, c } = await twoNodes(t, () => "2");
  const id = taskOfShard(5);
  two.tasks.set(id, create(TaskSchema, { id, client: "tester" }));
  let busy = 0;
  two.onRequest = (socket, req) => {
    if (req.body.case !== "registerTask" && (req.body.case !== "getTask" || busy === 2)) {
      return false;
    }
    busy++;
    answer(socket, refusal(req, Status.BUSY, "the task's shard is changing leaders"));
    return true;
  };
  const got = await c.getTask({ id });
  assert.equal(got.task?.id, id);
  await assert.rejects(c.schedule("x", { group: "g" }), BusyError);
  assert.equal(busy, 3, "2 BUSY answers to getTask and 1 to registerTask");
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { Fence, WebhookReceiver, defaultFenceCapacity, signWebhook, type Delivery } from "../src/index.js";

test("a fence admits the highest term per key and forgets the least recently used", () => {
  const fence = new Fence(2);
  assert.equal(fence.admit("c/a", 3n), true);
  assert.equal(fence.admit("c/a", 3n), true, "the same leader again");
  assert.equal(fence.admit("c/a", 2n), false, "a replaced leader");
  assert.equal(fence.admit("c/b", 1n), true, "another key's terms are not compared");
  assert.equal(fence.admit("c/a", 2n), false, "c/a is now the most recently used");
  assert.equal(fence.admit("c/c", 1n), true, "c/b is forgotten to make room");
  assert.equal(fence.admit("c/b", 0n), true, "a forgotten key admits any term");
  assert.equal(fence.admit("c/c", 0n), false);
  assert.equal(fence.stale, 3);
  assert.equal(new Fence().capacity, defaultFenceCapacity);
  assert.equal(new Fence(0).capacity, defaultFenceCapacity);
});

test("a fenced webhook receiver acknowledges a replaced leader's delivery without handling it", async () => {
  const fence = new Fence();
  const handled: string[] = [];
  const receiver = new WebhookReceiver({
    secret: "whsec_example",
    now: () => 1767225600_000,
    handler: fence.wrap((d: Delivery) => {
      handled.push(new TextDecoder().decode(d.payload));
    }),
  });
  const deliver = async (payload: string, group: string, term: bigint) => {
    const meta = { deliveryId: 1n, taskId: 2n, attempt: 1, fireAtMs: 1767225600000n, client: "billing", group, term, timestamp: 1767225600 };
    const body = new TextEncoder().encode(payload);
    return (await receiver.receive("POST", await signWebhook("whsec_example", meta, body), body)).status;
  };
  assert.equal(await deliver("new leader", "g", 5n), 204);
  assert.equal(await deliver("replaced leader", "g", 4n), 204);
  assert.equal(await deliver("another group", "h", 1n), 204);
  assert.deepEqual(handled, ["new leader", "another group"]);
  assert.equal(fence.stale, 1);
});

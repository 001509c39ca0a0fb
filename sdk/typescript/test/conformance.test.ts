// Checks the SDK against the shared vectors in testdata/conformance (see
// the README there), so it stays byte-compatible with the Go code.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { equals, fromBinary, fromJson, toBinary, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { sizeDelimitedEncode } from "@bufbuild/protobuf/wire";
import {
  AckSchema,
  BadHeaderError,
  BadSignatureError,
  BoomerangService,
  DeliverySchema,
  Fence,
  FrameDecoder,
  FrameError,
  NoSignatureError,
  RequestSchema,
  ResponseSchema,
  StaleSignatureError,
  escapeName,
  fenceKey,
  signWebhook,
  signedBytes,
  unescapeName,
  verifyWebhook,
} from "../src/index.js";
import { shardOfId, shardOfTask } from "../src/shard.js";

const dir = resolve(fileURLToPath(import.meta.url), "../../../../../testdata/conformance");

function load<T>(name: string): T {
  return JSON.parse(readFileSync(resolve(dir, name), "utf8")) as T;
}

const schemas = new Map<string, DescMessage>([
  ["boomerang.v1.Request", RequestSchema],
  ["boomerang.v1.Response", ResponseSchema],
  ["boomerang.v1.Delivery", DeliverySchema],
  ["boomerang.v1.Ack", AckSchema],
]);

function schema(type: string): DescMessage {
  const s = schemas.get(type);
  assert.ok(s !== undefined, `unknown type ${type}`);
  return s;
}

const unhex = (s: string) => Uint8Array.from(Buffer.from(s, "hex"));
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

interface MessageVector {
  name: string;
  type: string;
  json: JsonValue;
  hex: string;
  frame_hex: string;
}

function checkMessage(v: MessageVector): void {
  const desc = schema(v.type);
  const fromJ = fromJson(desc, v.json);
  const fromB = fromBinary(desc, unhex(v.hex));
  assert.ok(equals(desc, fromJ, fromB), `${v.name}: hex and json hold different messages`);
  // Field order may differ from Go's (see the README); content and size may not.
  const encoded = toBinary(desc, fromJ);
  assert.ok(equals(desc, fromBinary(desc, encoded), fromJ), `${v.name}: encoding round trip`);
  assert.equal(encoded.length, v.hex.length / 2, `${v.name}: encoded size`);
  const frame = sizeDelimitedEncode(desc, fromJ);
  assert.equal(hex(frame.subarray(0, frame.length - encoded.length)), v.frame_hex.slice(0, v.frame_hex.length - v.hex.length), `${v.name}: length prefix`);
  const out: unknown[] = [];
  const decoder = new FrameDecoder(desc, 1 << 20);
  decoder.push(unhex(v.frame_hex), (m) => out.push(m));
  decoder.end();
  assert.equal(out.length, 1, `${v.name}: one frame`);
  assert.ok(equals(desc, out[0] as typeof fromJ, fromJ), `${v.name}: framed message`);
}

test("envelopes: a request and a response per operation, byte for byte", () => {
  const f = load<{ requests: MessageVector[]; responses: MessageVector[] }>("envelopes.json");
  for (const v of [...f.requests, ...f.responses]) {
    checkMessage(v);
  }
  const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  for (const op of Object.keys(BoomerangService.method)) {
    assert.ok(f.requests.some((v) => v.name === snake(op)), `a request vector for ${op}`);
    assert.ok(f.responses.some((v) => v.name === snake(op)), `a response vector for ${op}`);
  }
});

test("callbacks: Delivery and Ack frames", () => {
  const f = load<{ deliveries: MessageVector[]; acks: MessageVector[] }>("callbacks.json");
  for (const v of [...f.deliveries, ...f.acks]) {
    checkMessage(v);
  }
});

test("frames: streams in any split, and broken streams", () => {
  const f = load<{
    streams: Array<{ name: string; type: string; stream_hex: string; messages: JsonValue[] }>;
    broken: Array<{ name: string; type: string; stream_hex: string; max_bytes: number; error: string }>;
  }>("frames.json");
  for (const s of f.streams) {
    const desc = schema(s.type);
    const stream = unhex(s.stream_hex);
    // Whole, byte by byte, and in chunks of 7.
    for (const size of [stream.length, 1, 7]) {
      const decoder = new FrameDecoder(desc, 1 << 20);
      const out: unknown[] = [];
      for (let i = 0; i < stream.length; i += size) {
        decoder.push(stream.subarray(i, i + size), (m) => out.push(m));
      }
      decoder.end();
      assert.equal(out.length, s.messages.length, `${s.name} in chunks of ${size}`);
      s.messages.forEach((json, i) => assert.ok(equals(desc, out[i] as never, fromJson(desc, json)), `${s.name}: message ${i}`));
    }
  }
  for (const b of f.broken) {
    const decoder = new FrameDecoder(schema(b.type), b.max_bytes);
    assert.throws(
      () => {
        decoder.push(unhex(b.stream_hex), () => {});
        decoder.end();
      },
      (err: unknown) => err instanceof FrameError && err.kind === b.error,
      b.name,
    );
  }
});

interface Signature {
  name: string;
  secret_hex: string;
  delivery_id: string;
  task_id: string;
  attempt: number;
  fire_at_ms: string;
  client: string;
  group: string;
  term: string;
  timestamp: number;
  body_hex: string;
  signed_hex: string;
  headers: Record<string, string>;
}

interface Verification {
  name: string;
  secret_hex: string;
  headers: Record<string, string>;
  body_hex: string;
  now: number;
  tolerance_seconds: number;
  result: string;
  delivery?: { delivery_id: string; task_id: string; attempt: number; fire_at_ms: string; client: string; group: string; term: string; timestamp: number };
}

const verdicts = new Map<string, new (...args: never[]) => Error>([
  ["no_signature", NoSignatureError],
  ["bad_signature", BadSignatureError],
  ["stale", StaleSignatureError],
  ["bad_header", BadHeaderError],
]);

test("webhooks: signatures, verdicts and name escaping", async () => {
  const f = load<{ signatures: Signature[]; verifications: Verification[]; escapes: Array<{ raw: string; escaped: string }>; unescape_invalid: string[] }>("webhooks.json");
  for (const s of f.signatures) {
    const meta = {
      deliveryId: BigInt(s.delivery_id),
      taskId: BigInt(s.task_id),
      attempt: s.attempt,
      fireAtMs: BigInt(s.fire_at_ms),
      client: s.client,
      group: s.group,
      term: BigInt(s.term),
      timestamp: s.timestamp,
    };
    const headers = await signWebhook(unhex(s.secret_hex), meta, unhex(s.body_hex));
    assert.deepEqual(headers, s.headers, s.name);
    const fields = ["Boomerang-Timestamp", "Boomerang-Task-Id", "Boomerang-Attempt", "Boomerang-Fire-At", "Boomerang-Client", "Boomerang-Group", "Boomerang-Term"].map((n) => s.headers[n]!);
    assert.equal(hex(signedBytes(fields, unhex(s.body_hex))), s.signed_hex, `${s.name}: signed bytes`);
  }
  for (const v of f.verifications) {
    // Node.js hands headers over with lower-case names; both must work.
    const lower = Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.toLowerCase(), x]));
    for (const headers of [v.headers, lower, new Headers(v.headers)]) {
      const options = { now: v.now * 1000, toleranceMs: v.tolerance_seconds * 1000 };
      const result = verifyWebhook(unhex(v.secret_hex), headers, unhex(v.body_hex), options);
      if (v.result === "ok") {
        const d = await result;
        assert.equal(d.taskId, BigInt(v.delivery!.task_id), v.name);
        assert.equal(d.deliveryId, BigInt(v.delivery!.delivery_id), v.name);
        assert.equal(d.attempt, v.delivery!.attempt, v.name);
        assert.equal(d.fireAtMs, BigInt(v.delivery!.fire_at_ms), v.name);
        assert.equal(d.client, v.delivery!.client, v.name);
        assert.equal(d.group, v.delivery!.group, v.name);
        assert.equal(d.term, BigInt(v.delivery!.term), v.name);
        assert.equal(d.sentMs, BigInt(v.delivery!.timestamp) * 1000n, v.name);
        assert.deepEqual(d.payload, unhex(v.body_hex), v.name);
      } else {
        await assert.rejects(result, verdicts.get(v.result)!, v.name);
      }
    }
  }
  for (const e of f.escapes) {
    assert.equal(escapeName(e.raw), e.escaped);
    assert.equal(unescapeName(e.escaped), e.raw);
  }
  for (const bad of f.unescape_invalid) {
    assert.throws(() => unescapeName(bad), Error, bad);
  }
});

test("fences: keys and admit sequences", () => {
  const f = load<{
    keys: Array<{ name: string; delivery: JsonValue; key: string }>;
    sequences: Array<{ name: string; capacity: number; steps: Array<{ key: string; term: string; admitted: boolean }>; stale: number }>;
  }>("fences.json");
  for (const k of f.keys) {
    assert.equal(fenceKey(fromJson(DeliverySchema, k.delivery)), k.key, k.name);
  }
  for (const s of f.sequences) {
    const fence = new Fence(s.capacity);
    s.steps.forEach((step, i) => assert.equal(fence.admit(step.key, BigInt(step.term)), step.admitted, `${s.name} step ${i}`));
    assert.equal(fence.stale, s.stale, s.name);
  }
});

test("shards: the shard of a new task and of a task id", () => {
  const f = load<{
    tasks: Array<{ name: string; shards: number; client: string; group?: string; idempotency_key?: string; replace_key?: string; shard: number; placed: boolean }>;
    ids: Array<{ task_id: string; shard: number }>;
  }>("shards.json");
  assert.ok(f.tasks.length > 0 && f.ids.length > 0);
  for (const v of f.tasks) {
    const got = shardOfTask(v.shards, v.client, v.group ?? "", v.idempotency_key ?? "", v.replace_key ?? "");
    assert.equal(got, v.placed ? v.shard : undefined, v.name);
  }
  for (const v of f.ids) {
    assert.equal(shardOfId(BigInt(v.task_id)), v.shard, v.task_id);
  }
});

import { create } from "@bufbuild/protobuf";
import { DeliverySchema, type Delivery } from "./gen/api/boomerang/v1/boomerang_pb.js";

// The wire format of HTTP callbacks (docs/callbacks.md): the headers that
// describe a delivery and the HMAC-SHA256 signature that proves it came
// from Boomerang. Web Crypto does the HMAC, so this works in Node.js,
// browsers, Deno, Bun and edge runtimes alike.

/** Header names of an HTTP delivery. HTTP header names are case-insensitive. */
export const HeaderDeliveryId = "Boomerang-Delivery-Id";
export const HeaderTaskId = "Boomerang-Task-Id";
export const HeaderAttempt = "Boomerang-Attempt";
export const HeaderFireAt = "Boomerang-Fire-At";
export const HeaderClient = "Boomerang-Client";
export const HeaderGroup = "Boomerang-Group";
export const HeaderTimestamp = "Boomerang-Timestamp";
export const HeaderSignature = "Boomerang-Signature";

/** Prefixes a v1 signature in Boomerang-Signature. */
export const SchemeV1 = "v1=";

/** How far a delivery's timestamp may be from the receiver's clock, either way. */
export const defaultToleranceMs = 5 * 60_000;

/** A webhook that fails verification; the receiver answers 401 (400 for BadHeaderError). */
export class WebhookError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
/** The delivery carries no v1 signature. */
export class NoSignatureError extends WebhookError {}
/**
 * No v1 signature matches the secret: the delivery was not sent by Boomerang
 * with this client's secret, or was altered.
 */
export class BadSignatureError extends WebhookError {}
/** The timestamp is too far from the receiver's clock: a replay, or clocks out of step. */
export class StaleSignatureError extends WebhookError {}
/** A Boomerang header is missing or malformed. */
export class BadHeaderError extends WebhookError {}

/**
 * Request headers in any of the usual shapes: a fetch Headers object, or a
 * plain object such as Node's IncomingHttpHeaders (names in any case,
 * values a string or a list of strings).
 */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/** What the headers of a delivery say. */
export interface WebhookMeta {
  deliveryId: bigint;
  taskId: bigint;
  attempt: number;
  fireAtMs: bigint;
  client: string;
  group: string;
  /** When the attempt was sent, Unix seconds. */
  timestamp: number;
}

/** Options of verifyWebhook. */
export interface VerifyOptions {
  /** The receiver's clock, Unix milliseconds. Default Date.now(). */
  now?: number;
  /** Default defaultToleranceMs. */
  toleranceMs?: number;
}

/**
 * Checks an HTTP delivery: its Boomerang headers, its signature over the
 * headers and body with the client's signing secret (compared in constant
 * time by Web Crypto), and its timestamp against the clock. Returns the
 * delivery the headers and body describe, or throws BadHeaderError,
 * NoSignatureError, BadSignatureError or StaleSignatureError.
 */
export async function verifyWebhook(secret: Uint8Array | string, headers: HeaderSource, body: Uint8Array, options: VerifyOptions = {}): Promise<Delivery> {
  const meta = parseWebhookHeaders(headers);
  const entries = (getAll(headers, HeaderSignature) ?? "").split(",").map((e) => e.trim());
  const v1 = entries.filter((e) => e.startsWith(SchemeV1)).map((e) => e.slice(SchemeV1.length));
  if (v1.length === 0) {
    throw new NoSignatureError(`no ${SchemeV1} signature`);
  }
  const key = await hmacKey(secret, "verify");
  const signed = signedBytes(signedFields(headers), body);
  let ok = false;
  for (const sig of v1) {
    const mac = unhex(sig);
    // Every entry is checked, so the time taken does not tell which matched.
    if (mac !== undefined && (await crypto.subtle.verify("HMAC", key, mac, signed))) {
      ok = true;
    }
  }
  if (!ok) {
    throw new BadSignatureError("signature does not match");
  }
  // Checked after the signature, so a stale verdict is about a genuine
  // delivery, not a forged one.
  const now = options.now ?? Date.now();
  const tolerance = options.toleranceMs !== undefined && options.toleranceMs > 0 ? options.toleranceMs : defaultToleranceMs;
  const skew = now - meta.timestamp * 1000;
  if (skew > tolerance || skew < -tolerance) {
    throw new StaleSignatureError(`timestamp outside tolerance: sent ${new Date(meta.timestamp * 1000).toISOString()}, now ${new Date(now).toISOString()}, tolerance ${tolerance} ms`);
  }
  return create(DeliverySchema, {
    deliveryId: meta.deliveryId,
    taskId: meta.taskId,
    attempt: meta.attempt,
    client: meta.client,
    group: meta.group,
    fireAtMs: meta.fireAtMs,
    payload: body,
    sentMs: BigInt(meta.timestamp) * 1000n,
  });
}

/**
 * The headers Boomerang sends with a delivery described by meta, signed
 * with secret over meta and body: for tests of a receiver, and for relaying
 * deliveries.
 */
export async function signWebhook(secret: Uint8Array | string, meta: WebhookMeta, body: Uint8Array): Promise<Record<string, string>> {
  const h: Record<string, string> = {
    [HeaderDeliveryId]: meta.deliveryId.toString(),
    [HeaderTaskId]: meta.taskId.toString(),
    [HeaderAttempt]: String(meta.attempt),
    [HeaderFireAt]: meta.fireAtMs.toString(),
    [HeaderClient]: escapeName(meta.client),
    [HeaderGroup]: escapeName(meta.group),
    [HeaderTimestamp]: String(meta.timestamp),
  };
  const key = await hmacKey(secret, "sign");
  const mac = await crypto.subtle.sign("HMAC", key, signedBytes(signedFields(h), body));
  h[HeaderSignature] = SchemeV1 + hex(new Uint8Array(mac));
  return h;
}

/**
 * The bytes that are signed: the six header values as received, each
 * followed by a line feed, then the body.
 */
export function signedBytes(fields: string[], body: Uint8Array): Uint8Array {
  const head = latin1(fields.map((f) => `${f}\n`).join(""));
  const out = new Uint8Array(head.length + body.length);
  out.set(head, 0);
  out.set(body, head.length);
  return out;
}

function signedFields(h: HeaderSource): string[] {
  return [HeaderTimestamp, HeaderTaskId, HeaderAttempt, HeaderFireAt, HeaderClient, HeaderGroup].map((n) => get(h, n) ?? "");
}

/** Reads the delivery headers without checking the signature. */
export function parseWebhookHeaders(h: HeaderSource): WebhookMeta {
  return {
    deliveryId: parseInteger(h, HeaderDeliveryId, false, 64),
    taskId: parseInteger(h, HeaderTaskId, false, 64),
    attempt: Number(parseInteger(h, HeaderAttempt, false, 32)),
    fireAtMs: parseInteger(h, HeaderFireAt, true, 64),
    timestamp: Number(parseInteger(h, HeaderTimestamp, true, 64)),
    client: unescapeHeader(h, HeaderClient),
    group: unescapeHeader(h, HeaderGroup),
  };
}

/** Decimal integers as Go's strconv reads them: unsigned ones unsigned, signed ones with an optional sign. */
function parseInteger(h: HeaderSource, name: string, signed: boolean, bits: number): bigint {
  const v = get(h, name) ?? "";
  if (!(signed ? /^[+-]?[0-9]+$/ : /^[0-9]+$/).test(v)) {
    throw new BadHeaderError(`bad header: ${name} ${JSON.stringify(v)}`);
  }
  const n = BigInt(v);
  const [lo, hi] = signed ? [-(1n << BigInt(bits - 1)), (1n << BigInt(bits - 1)) - 1n] : [0n, (1n << BigInt(bits)) - 1n];
  if (n < lo || n > hi) {
    throw new BadHeaderError(`bad header: ${name} ${JSON.stringify(v)}`);
  }
  return n;
}

function unescapeHeader(h: HeaderSource, name: string): string {
  try {
    return unescapeName(get(h, name) ?? "");
  } catch (err) {
    throw new BadHeaderError(`bad header: ${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The first value of a header, by name in any case. */
function get(h: HeaderSource, name: string): string | undefined {
  const v = lookup(h, name);
  return Array.isArray(v) ? v[0] : v;
}

/** Every value of a header, comma-joined. */
function getAll(h: HeaderSource, name: string): string | undefined {
  const v = lookup(h, name);
  return Array.isArray(v) ? v.join(",") : v;
}

function lookup(h: HeaderSource, name: string): string | string[] | undefined {
  if (typeof (h as Headers).get === "function" && typeof (h as Headers).has === "function") {
    return (h as Headers).get(name) ?? undefined;
  }
  const rec = h as Record<string, string | string[] | undefined>;
  const lower = name.toLowerCase();
  if (rec[lower] !== undefined) {
    return rec[lower];
  }
  for (const k of Object.keys(rec)) {
    if (k.toLowerCase() === lower) {
      return rec[k];
    }
  }
  return undefined;
}

const unreserved = /^[A-Za-z0-9\-._~]$/;

/**
 * Percent-encodes every byte of the UTF-8 encoding of s outside A-Z a-z 0-9
 * - . _ ~, as Boomerang does for client and group names in headers.
 */
export function escapeName(s: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(b);
    out += unreserved.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Decodes %XX sequences (either case); other characters are kept. Throws on a bad escape. */
export function unescapeName(s: string): string {
  if (!s.includes("%")) {
    return s;
  }
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "%") {
      bytes.push(...latin1(s[i]!));
      continue;
    }
    const pair = s.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(pair)) {
      throw new Error(pair.length < 2 ? `truncated escape in ${JSON.stringify(s)}` : `bad escape ${JSON.stringify(`%${pair}`)}`);
    }
    bytes.push(parseInt(pair, 16));
    i += 2;
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Header values travel as bytes, which HTTP libraries hand over as Latin-1 strings. */
function latin1(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    out[i] = s.charCodeAt(i) & 0xff;
  }
  return out;
}

function hmacKey(secret: Uint8Array | string, use: "sign" | "verify") {
  const raw = typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [use]);
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** The 32 bytes of a hex HMAC-SHA256, or undefined if s is not one. */
function unhex(s: string): Uint8Array | undefined {
  if (!/^[0-9A-Fa-f]{64}$/.test(s)) {
    return undefined;
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

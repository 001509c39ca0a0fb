// The shard of a task, computed exactly as the server's store does, so a
// routing client can send each request to its shard's leader. The shared
// vectors in testdata/conformance/shards.json pin it down.

const mask64 = (1n << 64n) - 1n;
const fnvOffset = 14695981039346656037n;
const fnvPrime = 1099511628211n;
const utf8 = new TextEncoder();

/** A task id's bits from 48 up hold its shard. */
const idCounterBits = 48n;

/** The splitmix64 finalizer, modulo 2^64. */
function mix64(x: bigint): bigint {
  x ^= x >> 30n;
  x = (x * 0xbf58476d1ce4e5b9n) & mask64;
  x ^= x >> 27n;
  x = (x * 0x94d049bb133111ebn) & mask64;
  x ^= x >> 31n;
  return x;
}

/** FNV-1a 64 over bytes, continuing from h. */
function fnv1a(h: bigint, bytes: Uint8Array): bigint {
  for (const b of bytes) {
    h = ((h ^ BigInt(b)) * fnvPrime) & mask64;
  }
  return h;
}

/** The shard of a client's group among shards (a power of two). */
export function shardOfGroup(shards: number, client: string, group: string): number {
  let h = fnv1a(fnvOffset, utf8.encode(client));
  h = (h * fnvPrime) & mask64; // the 0 byte between the two: h ^ 0 is h
  h = fnv1a(h, utf8.encode(group));
  return Number(mix64(h) & BigInt(shards - 1));
}

/**
 * The shard of a new task: its group's, else its idempotency key's, else
 * its replace key's; undefined when it has none, and may go to any shard.
 */
export function shardOfTask(shards: number, client: string, group: string, idempotencyKey: string, replaceKey: string): number | undefined {
  if (group !== "") {
    return shardOfGroup(shards, client, group);
  }
  if (idempotencyKey !== "") {
    return shardOfGroup(shards, client, "\0" + idempotencyKey);
  }
  if (replaceKey !== "") {
    return shardOfGroup(shards, client, "\0replace\0" + replaceKey);
  }
  return undefined;
}

/** The shard a task id carries. */
export function shardOfId(id: bigint): number {
  return Number((id & mask64) >> idCounterBits);
}

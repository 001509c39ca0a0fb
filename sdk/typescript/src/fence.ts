import type { Delivery } from "./gen/api/boomerang/v1/boomerang_pb.js";
import type { Handler } from "./receiver.js";

/** How many keys a Fence remembers unless told otherwise. */
export const defaultFenceCapacity = 100_000;

/**
 * Fence drops deliveries sent by a shard leader that has been replaced.
 *
 * Every delivery carries the Raft term in which its sender leads the
 * task's shard (`delivery.term`, from 1). Terms only grow from one leader
 * to the next, so once a receiver has seen term T for a group, a delivery
 * for that group with a lower term comes from a leader that was replaced:
 * one cut off from its cluster, or slow, may still deliver for a short
 * while. That leader can no longer record any outcome, so its delivery may
 * be dropped: the task is in the new leader's hands, which delivers it
 * again unless its own delivery already settled it.
 *
 * A Fence keeps the highest term it admitted per key. fenceKey names the
 * key of a delivery: its client and group, or for an ungrouped task its
 * client and task id. Terms of different keys are never compared: groups
 * live in shards with independent terms.
 *
 * Memory is bounded: a Fence remembers at most `capacity` keys, forgetting
 * the least recently used one to make room. A forgotten key's next
 * delivery is admitted whatever its term, so size the capacity above the
 * keys that receive deliveries within a few seconds, the time a replaced
 * leader may go on delivering. A Fence only knows what its own process
 * has seen, and it does not make delivery exactly once: keep
 * deduplicating by (taskId, fireAtMs).
 */
export class Fence {
  readonly capacity: number;
  // A Map iterates in insertion order; a key is moved to the end on every
  // use, so the first key is the least recently used.
  readonly #terms = new Map<string, bigint>();
  #stale = 0;

  /** capacity bounds the keys remembered; 0 or less means defaultFenceCapacity. */
  constructor(capacity = defaultFenceCapacity) {
    this.capacity = capacity > 0 ? Math.floor(capacity) : defaultFenceCapacity;
  }

  /**
   * Whether a delivery in term may be processed under key: true when term
   * is at least the highest term admitted for key so far (it then becomes
   * the highest), false when it is lower.
   */
  admit(key: string, term: bigint): boolean {
    const highest = this.#terms.get(key);
    if (highest !== undefined) {
      this.#terms.delete(key);
      if (term < highest) {
        this.#terms.set(key, highest);
        this.#stale++;
        return false;
      }
    } else if (this.#terms.size >= this.capacity) {
      this.#terms.delete(this.#terms.keys().next().value as string);
    }
    this.#terms.set(key, term);
    return true;
  }

  /** How many deliveries admit has refused. */
  get stale(): number {
    return this.#stale;
  }

  /**
   * A handler, for any receiver, that passes handler the deliveries this
   * fence admits under fenceKey, and acknowledges the others without
   * calling it:
   *
   *     const fence = new Fence();
   *     const receiver = new HTTPReceiver({ secret, handler: fence.wrap(handler) });
   *
   * A stale delivery is answered with success, not an error. Either is
   * safe: its sender no longer leads the task's shard, so the outcome it
   * records cannot take effect, and the task stays with the new leader.
   * Success ends the stale attempt at once; an error would have the
   * replaced leader retry against this receiver until it learns that it
   * was replaced, and count failures that are not the receiver's.
   */
  wrap(handler: Handler): Handler {
    return async (delivery, signal) => {
      if (this.admit(fenceKey(delivery), delivery.term)) {
        await handler(delivery, signal);
      }
    };
  }
}

/**
 * The key a delivery is fenced under: "client/group", or for an ungrouped
 * task "client#taskId". A client id never holds "/" or "#", so two
 * deliveries share a key only when they share a client and a group, or a
 * task.
 */
export function fenceKey(delivery: Delivery): string {
  return delivery.group !== "" ? `${delivery.client}/${delivery.group}` : `${delivery.client}#${delivery.taskId}`;
}

import type { GetRoutesResponse, NotLeader } from "./gen/api/boomerang/v1/boomerang_pb.js";
import type { Operation, RequestOf } from "./api.js";
import { shardOfGroup, shardOfId, shardOfTask } from "./shard.js";

/**
 * Routes is one routing view (GetRoutes) in the shape lookups need. It is
 * never changed once made: a NOT_LEADER hint makes a changed copy.
 */
export class Routes {
  readonly standalone: boolean;
  readonly shards: number;
  readonly revision: bigint;
  /** The caller, whose groups' shards depend on it. */
  readonly client: string;
  /** The node the client's own connection reaches. */
  readonly self: string;
  /** Node id to raw TCP address. */
  readonly #addrs: ReadonlyMap<string, string>;
  /** Shard to node id; "" unknown. */
  readonly #leaders: readonly string[];

  private constructor(v: { standalone: boolean; shards: number; revision: bigint; client: string; self: string; addrs: ReadonlyMap<string, string>; leaders: readonly string[] }) {
    this.standalone = v.standalone;
    this.shards = v.shards;
    this.revision = v.revision;
    this.client = v.client;
    this.self = v.self;
    this.#addrs = v.addrs;
    this.#leaders = v.leaders;
  }

  /** The view a GetRoutes response gives. */
  static of(r: GetRoutesResponse): Routes {
    return new Routes({
      standalone: r.standalone || r.shards === 0, shards: r.shards, revision: r.revision, client: r.client, self: r.node,
      addrs: new Map(r.nodes.map((n) => [n.id, n.tcpAddress])), leaders: r.leaders,
    });
  }

  /** The view of a server that does not route: the node dialed leads everything. */
  static standaloneServer(): Routes {
    return new Routes({ standalone: true, shards: 0, revision: 0n, client: "", self: "", addrs: new Map(), leaders: [] });
  }

  /**
   * The address of shard's leader, or "" for the client's own connection:
   * its node leads the shard, or no leader is known.
   */
  addr(shard: number): string {
    const id = this.#leaders[shard] ?? "";
    return id === "" || id === this.self ? "" : (this.#addrs.get(id) ?? "");
  }

  /** This view with the hint's node leading its shard. */
  withLeader(hint: NotLeader): Routes {
    if (hint.shard >= this.#leaders.length || hint.leaderId === "") {
      return this;
    }
    const leaders = [...this.#leaders];
    leaders[hint.shard] = hint.leaderId;
    const addrs = new Map(this.#addrs).set(hint.leaderId, hint.leaderTcpAddress);
    return new Routes({ standalone: this.standalone, shards: this.shards, revision: this.revision, client: this.client, self: this.self, addrs, leaders });
  }

  /**
   * Where a request goes: the address of its shard's leader, or "" for the
   * client's own connection. An ungrouped task without keys may go to any
   * node: spread picks the leader of one shard after another.
   */
  target<K extends Operation>(op: K, request: RequestOf<K>, spread: number): string {
    switch (op) {
      case "registerTask": {
        const t = request as RequestOf<"registerTask">;
        return this.addr(shardOfTask(this.shards, this.client, t.group, t.idempotencyKey, t.replaceKey) ?? spread % this.shards);
      }
      case "getGroup":
      case "unblockGroup":
      case "skipGroup": {
        const g = request as RequestOf<"getGroup" | "unblockGroup" | "skipGroup">;
        return this.addr(shardOfGroup(this.shards, g.client === "" ? this.client : g.client, g.group));
      }
    }
    if (aboutTask.has(op)) {
      return this.addr(shardOfId((request as RequestOf<"getTask">).id));
    }
    return "";
  }

  /** The shard of a task of a batch for client, if it has one. */
  shardOf(client: string, t: RequestOf<"registerTask">): number | undefined {
    return shardOfTask(this.shards, client === "" ? this.client : client, t.group, t.idempotencyKey, t.replaceKey);
  }
}

/** Operations on one task (or dead letter: it keeps its task's id), by its id. */
const aboutTask = new Set<Operation>([
  "updateTask", "cancelTask", "getTask", "getTaskAttempts", "getDeadLetter", "replayDeadLetter", "deleteDeadLetter",
]);

/**
 * Operations a node never answers NOT_LEADER: those on the session itself
 * and the routing view; batches are split by the client instead.
 */
const unroutable = new Set<Operation>(["login", "refreshSession", "logout", "getRoutes", "getServerInfo", "registerTasks"]);

/** Whether a request may be answered NOT_LEADER. */
export function routable(op: Operation): boolean {
  return !unroutable.has(op);
}

/** Reads, which change nothing. */
const reads = new Set<Operation>([
  "getTask", "getTaskAttempts", "getDeadLetter", "getGroup", "listTasks", "listDeadLetters", "listGroups", "getStats",
]);

/**
 * Whether a request may be sent again after a connection broke with it in
 * flight, or it was answered BUSY: it changes nothing, or a repeat finds
 * what the first attempt did.
 */
export function repeatable<K extends Operation>(op: K, request: RequestOf<K>): boolean {
  if (op === "registerTask") {
    return (request as RequestOf<"registerTask">).idempotencyKey !== "";
  }
  return reads.has(op);
}

import { create } from "@bufbuild/protobuf";
import { ErrorSchema, RegisterTaskResultSchema, RegisterTasksRequestSchema, RegisterTasksResponseSchema, RequestSchema, type Response } from "./gen/api/boomerang/v1/boomerang_pb.js";
import type { RequestOf, ResponseOf } from "./api.js";
import { bodyOf } from "./body.js";
import { BoomerangError, ProtocolError } from "./errors.js";
import { NotSentError } from "./peers.js";
import type { Router } from "./router.js";

/** Runs send with the session, renewing it once when it is refused. */
export type WithSession = <T>(signal: AbortSignal | undefined, send: (sessionId: string) => Promise<T>) => Promise<T>;

/**
 * Sends a batch's tasks to their shards' leaders: one RegisterTasks request
 * per leader, all at once, each keeping the batch's order (a group's tasks
 * share a shard), and the results put back in the batch's order. Ungrouped
 * tasks without keys go to the client's own node, which places them on
 * shards it leads; a node whose shard moved meanwhile forwards what it
 * does not lead. A part refused as a whole fails its tasks; a broken
 * connection or an abort fails the call, as for one request.
 */
export async function registerTasks(
  router: Router, request: RequestOf<"registerTasks">, sessionId: string, signal: AbortSignal | undefined, withSession: WithSession,
): Promise<ResponseOf<"registerTasks">> {
  const parts = await split(router, request, signal);
  if (parts.size <= 1) {
    const addr = parts.keys().next().value ?? "";
    return bodyOf("registerTasks", await sendPart(router, request, addr, sessionId, signal));
  }
  const out = create(RegisterTasksResponseSchema);
  let failed: { error: unknown } | undefined;
  await Promise.all(
    [...parts].map(async ([addr, indexes]) => {
      const sub = create(RegisterTasksRequestSchema, { client: request.client, tasks: indexes.map((i) => request.tasks[i]!) });
      try {
        const resp = await withSession(signal, async (id) => bodyOf("registerTasks", await sendPart(router, sub, addr, id, signal)));
        if (resp.results.length !== indexes.length) {
          throw new ProtocolError(`${resp.results.length} results for ${indexes.length} tasks`);
        }
        indexes.forEach((i, j) => (out.results[i] = resp.results[j]!));
      } catch (error) {
        if (!(error instanceof BoomerangError)) {
          failed ??= { error };
          return;
        }
        const refused = create(ErrorSchema, { status: error.status, message: error.serverMessage, field: error.field });
        indexes.forEach((i) => (out.results[i] = create(RegisterTaskResultSchema, { result: { case: "error", value: refused } })));
      }
    }),
  );
  if (failed !== undefined) {
    throw failed.error;
  }
  return out;
}

/** The indexes of the batch's tasks by the address of their leader ("" for the client's own node), in order. */
async function split(router: Router, request: RequestOf<"registerTasks">, signal: AbortSignal | undefined): Promise<Map<string, number[]>> {
  const parts = new Map<string, number[]>();
  const view = await router.viewFor("registerTasks", signal);
  if (view === undefined) {
    return parts;
  }
  request.tasks.forEach((t, i) => {
    const shard = view.shardOf(request.client, t);
    const addr = shard === undefined ? "" : view.addr(shard);
    const part = parts.get(addr);
    if (part === undefined) {
      parts.set(addr, [i]);
    } else {
      part.push(i);
    }
  });
  return parts;
}

/** Sends one RegisterTasks request to the node at addr, or through the client's own connection if that node cannot be reached. */
async function sendPart(router: Router, part: RequestOf<"registerTasks">, addr: string, sessionId: string, signal: AbortSignal | undefined): Promise<Response> {
  const envelope = () => create(RequestSchema, { sessionId, body: { case: "registerTasks", value: part } });
  try {
    return await router.host.exchange(envelope(), addr, signal);
  } catch (err) {
    if (!(err instanceof NotSentError)) {
      throw err;
    }
    router.refreshSoon();
    return router.host.exchange(envelope(), "", signal);
  }
}

import { create } from "@bufbuild/protobuf";
import { BoomerangService, type Response } from "./gen/api/boomerang/v1/boomerang_pb.js";
import type { Operation, ResponseOf } from "./api.js";
import { ProtocolError, errorFromWire } from "./errors.js";

/** Operations whose response may legitimately have no fields, which a server may leave out altogether. */
const mayBeEmpty = new Set<Operation>([
  "deregisterClient", "listClients", "cancelTask", "listTasks", "listDeadLetters", "deleteDeadLetter", "unblockGroup", "skipGroup",
  "cancelTasks", "purgeDeadLetters", "registerTasks",
]);

/** The operation's response in a response envelope; throws the error it carries instead. */
export function bodyOf<K extends Operation>(op: K, resp: Response): ResponseOf<K> {
  if (resp.error !== undefined) {
    throw errorFromWire(resp.error);
  }
  if (resp.body.case === op) {
    return resp.body.value as ResponseOf<K>;
  }
  if (mayBeEmpty.has(op)) {
    return create(BoomerangService.method[op].output) as ResponseOf<K>;
  }
  throw new ProtocolError(`the response to request ${resp.requestId} has no ${op} body`);
}

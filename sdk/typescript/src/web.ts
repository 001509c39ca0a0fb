// The entry point for browsers, edge runtimes, Deno and Bun: the Connect
// client, webhook verification and the Fetch API webhook receiver, with no
// Node.js module. Node.js programs import the package root, which adds the
// raw TCP client and the Node.js receivers.

export * from "./gen/api/boomerang/v1/boomerang_pb.js";
export { BoomerangApi, maxBatch } from "./api.js";
export type { BatchTask, CallOptions, Credentials, Logger, Operation, InputOf, RequestOf, ResponseOf, ScheduleOptions, ScheduleResult, Session } from "./api.js";
export {
  BoomerangError,
  BusyError,
  ClientClosedError,
  ConflictError,
  ConnectionLostError,
  GroupFullError,
  InternalError,
  InvalidRequestError,
  NotFoundError,
  ProtocolError,
  SessionExpiredError,
  UnauthorizedError,
  UnknownStatusError,
  statusOf,
} from "./errors.js";
export { FrameDecoder, FrameError, maxFrameLimit, type FrameErrorKind } from "./frames.js";
export { WebClient, type WebClientOptions } from "./web-client.js";
export * from "./webhook.js";
export { Fence, defaultFenceCapacity, fenceKey } from "./fence.js";
export { WebhookReceiver, defaultMaxDelivery, type Handler, type WebhookAnswer, type WebhookReceiverConfig } from "./receiver.js";
